package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Traffic keeps a franz-go producer and consumer busy on one topic while a
// test breaks brokers and controllers around them, and then checks that
// nothing the producer had acknowledged went missing.
//
// Each partition has its own producer goroutine that writes records one at
// a time with acks=all (the idempotent producer, franz-go's default), so a
// partition whose leader is gone stalls only itself, and its log must hold
// its records in sequence order. Record n of partition p has key n and a
// value derived from (topic, p, n), so the consumer can check the content
// of everything it reads.
type Traffic struct {
	t          testing.TB
	topic      string
	partitions int32
	prod, cons *kgo.Client

	stopProducing, stopConsuming context.CancelFunc
	producers, consumer          sync.WaitGroup

	mu       sync.Mutex
	acked    [][]int64     // per partition, the acknowledged sequence numbers
	ackedAt  [][]time.Time // per partition, when each of acked was acknowledged
	sent     []int64       // per partition, the next sequence number to try
	consumed [][]int64     // per partition, sequence numbers in the order read
	bad      []string      // records whose key or value was not ours
	lastErr  error         // the newest produce or fetch error, for reports
}

// trafficPace caps each partition's producer at about 100 records a second:
// enough to see progress at once, little enough to leave the JVMs the CPU.
const trafficPace = 10 * time.Millisecond

// StartTraffic begins producing to and consuming from topic, which has the
// given number of partitions, through the brokers at seeds. The clients are
// closed when the test ends.
func StartTraffic(t testing.TB, seeds []string, topic string, partitions int32) *Traffic {
	t.Helper()
	tr := &Traffic{t: t, topic: topic, partitions: partitions,
		acked: make([][]int64, partitions), ackedAt: make([][]time.Time, partitions), sent: make([]int64, partitions), consumed: make([][]int64, partitions)}
	common := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		// Learn new leaders quickly after a broker dies.
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	var err error
	tr.prod, err = kgo.NewClient(append(common,
		kgo.ClientID("kraftd-compat-producer"),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	// A consumer without a group: it reads every partition from the start
	// and needs no group coordinator (whose offsets topic has one replica).
	tr.cons, err = kgo.NewClient(append(common,
		kgo.ClientID("kraftd-compat-consumer"),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		tr.prod.Close()
		t.Fatal(err)
	}
	prodCtx, stopProducing := context.WithCancel(context.Background())
	consCtx, stopConsuming := context.WithCancel(context.Background())
	tr.stopProducing, tr.stopConsuming = stopProducing, stopConsuming
	for p := range partitions {
		tr.producers.Add(1)
		go tr.produce(prodCtx, p)
	}
	tr.consumer.Add(1)
	go tr.consume(consCtx)
	t.Cleanup(tr.close)
	return tr
}

// trafficValue is the content of record seq of partition p.
func trafficValue(topic string, p int32, seq int64) string {
	return fmt.Sprintf("%s/%d/%d/%s", topic, p, seq, strings.Repeat(strconv.FormatInt(seq%10, 10), 32))
}

func (tr *Traffic) produce(ctx context.Context, p int32) {
	defer tr.producers.Done()
	pace := time.NewTicker(trafficPace)
	defer pace.Stop()
	for seq := int64(0); ; seq++ {
		tr.mu.Lock()
		tr.sent[p] = seq + 1
		tr.mu.Unlock()
		rec := &kgo.Record{Topic: tr.topic, Partition: p, Key: []byte(strconv.FormatInt(seq, 10)), Value: []byte(trafficValue(tr.topic, p, seq))}
		err := tr.prod.ProduceSync(ctx, rec).FirstErr()
		if ctx.Err() != nil {
			return
		}
		tr.mu.Lock()
		if err != nil {
			tr.lastErr = fmt.Errorf("produce p%d #%d: %w", p, seq, err)
		} else {
			tr.acked[p] = append(tr.acked[p], seq)
			tr.ackedAt[p] = append(tr.ackedAt[p], time.Now())
		}
		tr.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-pace.C:
		}
	}
}

func (tr *Traffic) consume(ctx context.Context) {
	defer tr.consumer.Done()
	for ctx.Err() == nil {
		fetches := tr.cons.PollFetches(ctx)
		tr.mu.Lock()
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				tr.lastErr = fmt.Errorf("fetch %s p%d: %w", topic, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			seq, err := strconv.ParseInt(string(r.Key), 10, 64)
			if err != nil || r.Partition < 0 || r.Partition >= tr.partitions || string(r.Value) != trafficValue(tr.topic, r.Partition, seq) {
				tr.bad = append(tr.bad, fmt.Sprintf("p%d offset %d key %q value %q", r.Partition, r.Offset, r.Key, r.Value))
				return
			}
			tr.consumed[r.Partition] = append(tr.consumed[r.Partition], seq)
		})
		tr.mu.Unlock()
	}
}

// counts returns how many records each partition has had acknowledged and
// consumed so far.
func (tr *Traffic) counts() (acked, consumed []int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for p := range tr.partitions {
		acked = append(acked, len(tr.acked[p]))
		consumed = append(consumed, len(tr.consumed[p]))
	}
	return acked, consumed
}

// Progress is a point in the traffic, to wait for progress beyond.
type Progress struct{ acked, consumed []int }

// Mark notes how far producing and consuming have come.
func (tr *Traffic) Mark() Progress {
	a, c := tr.counts()
	return Progress{a, c}
}

// WaitProgress waits until, on every partition, at least n more records
// have been acknowledged and n more consumed than at since: both clients
// carry on, whichever brokers lead now.
func (tr *Traffic) WaitProgress(what string, since Progress, n int) {
	tr.t.Helper()
	Eventually(tr.t, ReadyTimeout, what+": producer and consumer progress", nil, func() error {
		acked, consumed := tr.counts()
		for p := range tr.partitions {
			if acked[p] < since.acked[p]+n || consumed[p] < since.consumed[p]+n {
				tr.mu.Lock()
				last := tr.lastErr
				tr.mu.Unlock()
				return fmt.Errorf("partition %d: acked %d (from %d), consumed %d (from %d), want %d more of each; last client error: %v",
					p, acked[p], since.acked[p], consumed[p], since.consumed[p], n, last)
			}
		}
		return nil
	})
}

// StopAndVerify stops producing, waits until the consumer has read up to the
// last acknowledged record of every partition, stops it and checks what it
// read: every acknowledged record, each exactly once with its content, in
// sequence order, and nothing that was never sent. It returns the number of
// acknowledged records.
func (tr *Traffic) StopAndVerify() int {
	tr.t.Helper()
	tr.stopProducing()
	tr.producers.Wait()
	Eventually(tr.t, ReadyTimeout, "consumer reads every acknowledged record", nil, func() error {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for p := range tr.partitions {
			if len(tr.acked[p]) == 0 {
				continue
			}
			last := tr.acked[p][len(tr.acked[p])-1]
			if !slices.Contains(tr.consumed[p], last) {
				return fmt.Errorf("partition %d: last acknowledged #%d not read yet (%d read); last client error: %v", p, last, len(tr.consumed[p]), tr.lastErr)
			}
		}
		return nil
	})
	tr.stopConsuming()
	tr.consumer.Wait()

	tr.mu.Lock()
	defer tr.mu.Unlock()
	total := 0
	for _, b := range tr.bad {
		tr.t.Errorf("%s: record that was not produced: %s", tr.topic, b)
	}
	for p := range tr.partitions {
		acked, read := tr.acked[p], tr.consumed[p]
		total += len(acked)
		if !slices.IsSorted(read) || len(slices.Compact(slices.Clone(read))) != len(read) {
			tr.t.Errorf("%s partition %d: records out of order or duplicated: %s", tr.topic, p, summarize(read))
		}
		var lost []int64
		for _, seq := range acked {
			if _, found := slices.BinarySearch(read, seq); !found {
				lost = append(lost, seq)
			}
		}
		if len(lost) > 0 {
			tr.t.Errorf("%s partition %d: %d acknowledged records lost: %s", tr.topic, p, len(lost), summarize(lost))
		}
		if len(read) > 0 && read[len(read)-1] >= tr.sent[p] {
			tr.t.Errorf("%s partition %d: read #%d, but only %d were sent", tr.topic, p, read[len(read)-1], tr.sent[p])
		}
		tr.t.Logf("%s partition %d: %d acknowledged, %d sent, %d read", tr.topic, p, len(acked), tr.sent[p], len(read))
	}
	return total
}

// LongestAckGap is the longest time, on any partition, between two
// consecutive acknowledgements of which at least one falls within from..to,
// or from the last one before to to when to comes after it: how long the
// producer went without a successful write around that window.
func (tr *Traffic) LongestAckGap(from, to time.Time) time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var longest time.Duration
	for _, times := range tr.ackedAt {
		for i := 1; i < len(times); i++ {
			if !times[i].Before(from) && !times[i-1].After(to) {
				longest = max(longest, times[i].Sub(times[i-1]))
			}
		}
		if n := len(times); n > 0 && times[n-1].Before(to) {
			last := times[n-1]
			if last.Before(from) {
				last = from
			}
			longest = max(longest, to.Sub(last))
		}
	}
	return longest
}

// summarize prints a long list of sequence numbers briefly.
func summarize(seqs []int64) string {
	if len(seqs) <= 20 {
		return fmt.Sprint(seqs)
	}
	return fmt.Sprintf("%v ... %v (%d in all)", seqs[:10], seqs[len(seqs)-10:], len(seqs))
}

func (tr *Traffic) close() {
	tr.stopProducing()
	tr.stopConsuming()
	tr.producers.Wait()
	tr.consumer.Wait()
	tr.prod.Close()
	tr.cons.Close()
}
