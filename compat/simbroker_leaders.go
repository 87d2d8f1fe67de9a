package compat

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

// partitionKey names one partition of the metadata image.
type partitionKey struct {
	topic     [16]byte
	partition int32
}

// LeaderTracker decodes the metadata batches a fleet's watcher fetches and
// keeps who leads each partition, so that a benchmark can tell when every
// partition a failed broker led is led by another, and when the fleet had
// fetched that change. It reads PartitionRecord, PartitionChangeRecord and
// the fencing records; everything else is skipped.
type LeaderTracker struct {
	mu      sync.Mutex
	leader  map[partitionKey]int32
	ledBy   map[int32]int // broker id (or -1: none) -> partitions it leads
	away    *awayWatch
	pending [][]byte // fetched batches not yet below the high watermark, in order
	jumps   int      // times the watcher skipped to a snapshot's end undecoded
	badRecs int      // records that did not decode
}

// awayWatch is one wait for partitions to leave a set of failed brokers.
type awayWatch struct {
	failed    map[int32]bool
	fencedAt  time.Time // max timestamp of the first batch that fenced one or moved a leader off one
	lastFence time.Time // max timestamp of the latest batch that fenced one of them
	fenced    map[int32]bool
	ledAt     time.Time // max timestamp of the batch after which none leads
	fetchedAt time.Time // when the watcher received that batch
	done      chan struct{}
}

// NewLeaderTracker returns an empty tracker.
func NewLeaderTracker() *LeaderTracker {
	return &LeaderTracker{leader: map[partitionKey]int32{}, ledBy: map[int32]int{}}
}

// Partitions is how many partitions the tracker knows.
func (t *LeaderTracker) Partitions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.leader)
}

// LedBy is how many partitions broker id leads (-1: how many have none).
func (t *LeaderTracker) LedBy(id int32) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ledBy[id]
}

// TopLeader is the broker leading the most partitions among candidates.
func (t *LeaderTracker) TopLeader(candidates []int32) int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.MaxFunc(candidates, func(a, b int32) int { return t.ledBy[a] - t.ledBy[b] })
}

// Skipped reports whether the watcher ever jumped over records it did not
// decode (a snapshot), after which the tracker's view may be stale.
func (t *LeaderTracker) Skipped() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.jumps + t.badRecs
}

// LeadAway is the outcome of WatchLeadAway.
type LeadAway struct {
	Led    int       // partitions the failed brokers led when the watch began
	Fenced time.Time // the first batch that fenced one or moved a leader off one
	// LastFence is the last batch fencing one of them before none led a
	// partition: a rack's brokers' sessions expire over a heartbeat
	// interval, not at once.
	LastFence time.Time
	LedAt     time.Time
	Fetched   time.Time
	Offline   int // partitions with no leader at the end
}

// WatchLeadAway starts watching for every partition led by a broker of
// failed to be led by another; wait returns once that happened (or the
// timeout passed, with an error). Call it before the brokers fail.
func (t *LeaderTracker) WatchLeadAway(failed []int32) (led int, wait func(timeout time.Duration) (LeadAway, error)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := &awayWatch{failed: map[int32]bool{}, fenced: map[int32]bool{}, done: make(chan struct{})}
	for _, id := range failed {
		w.failed[id] = true
		led += t.ledBy[id]
	}
	t.away = w
	return led, func(timeout time.Duration) (LeadAway, error) {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case <-w.done:
		case <-timer.C:
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.away = nil
		out := LeadAway{Led: led, Fenced: w.fencedAt, LastFence: w.lastFence, LedAt: w.ledAt, Fetched: w.fetchedAt, Offline: t.ledBy[-1]}
		if w.ledAt.IsZero() {
			var left []string
			for k, id := range t.leader {
				if w.failed[id] {
					left = append(left, fmt.Sprintf("%x-%d led by %d", k.topic, k.partition, id))
				}
			}
			slices.Sort(left)
			return out, errorf("after %v, %d partitions still led by the %d failed brokers (fenced at %v): %s",
				timeout, len(left), len(w.failed), w.fencedAt, strings.Join(left[:min(len(left), 5)], ", "))
		}
		return out, nil
	}
}

// skipped notes a jump to a snapshot's end; nil-safe.
func (t *LeaderTracker) skipped(int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.jumps++
	t.pending = nil
}

// truncate drops pending batches at or above offset, as the watcher's log
// is truncated there (a diverging epoch); nil-safe.
func (t *LeaderTracker) truncate(offset int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	keep := t.pending[:0]
	for _, b := range t.pending {
		if h, err := batch.ReadHeader(b); err == nil && h.BaseOffset < offset {
			keep = append(keep, b)
		}
	}
	t.pending = keep
}

// apply takes the batches fetched and decodes those wholly below the high
// watermark, with any pending from earlier fetches that now are; the rest
// wait, since a leader may send an observer records it has not committed
// and that a new leader truncates. Nil-safe.
func (t *LeaderTracker) apply(raw []byte, highWatermark int64) {
	if t == nil {
		return
	}
	received := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = batch.Walk(raw, func(_ batch.Header, b []byte) error {
		t.pending = append(t.pending, bytes.Clone(b))
		return nil
	})
	for len(t.pending) > 0 {
		h, err := batch.ReadHeader(t.pending[0])
		if err != nil || h.NextOffset() > highWatermark {
			break
		}
		t.applyBatch(h, t.pending[0], received)
		t.pending = t.pending[1:]
	}
}

func (t *LeaderTracker) applyBatch(h batch.Header, b []byte, received time.Time) {
	if h.IsControl() {
		return
	}
	decoded, err := batch.Decode(b)
	if err != nil {
		t.badRecs++
		return
	}
	for _, r := range decoded.Records {
		rec, err := metadata.DecodeValue(r.Value)
		if err != nil {
			t.badRecs++
			continue
		}
		t.applyRecord(rec, h)
	}
	t.checkAway(h, received)
}

func (t *LeaderTracker) applyRecord(rec metadata.Record, h batch.Header) {
	setLeader := func(k partitionKey, leader int32) {
		if old, ok := t.leader[k]; ok {
			t.ledBy[old]--
			if w := t.away; w != nil && w.failed[old] && w.fencedAt.IsZero() {
				w.fencedAt = time.UnixMilli(h.MaxTimestamp)
			}
		}
		t.leader[k] = leader
		t.ledBy[leader]++
	}
	fenced := int32(-1)
	switch r := rec.(type) {
	case *metadata.PartitionRecord:
		setLeader(partitionKey{r.TopicId, r.PartitionId}, r.Leader)
	case *metadata.PartitionChangeRecord:
		if r.Leader != -2 {
			setLeader(partitionKey{r.TopicId, r.PartitionId}, r.Leader)
		}
	case *metadata.FenceBrokerRecord:
		fenced = r.Id
	case *metadata.BrokerRegistrationChangeRecord:
		if r.Fenced == 1 {
			fenced = r.BrokerId
		}
	}
	if w := t.away; w != nil && fenced >= 0 && w.failed[fenced] && !w.fenced[fenced] {
		at := time.UnixMilli(h.MaxTimestamp)
		if w.fencedAt.IsZero() {
			w.fencedAt = at
		}
		w.fenced[fenced] = true
		w.lastFence = at
	}
}

// checkAway ends the watch once no failed broker leads a partition.
func (t *LeaderTracker) checkAway(h batch.Header, received time.Time) {
	w := t.away
	if w == nil || w.fencedAt.IsZero() || !w.ledAt.IsZero() {
		return
	}
	for id := range w.failed {
		if t.ledBy[id] > 0 {
			return
		}
	}
	w.ledAt, w.fetchedAt = time.UnixMilli(h.MaxTimestamp), received
	close(w.done)
}
