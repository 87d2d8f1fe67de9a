package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/protocol"
)

// Several clients pipeline Fetch requests answered with megabytes of
// records and never read: together they hold no more than the one
// node-wide budget (plus one small overdraft each), where each used to
// hold its own 32 MiB. Meanwhile the leader's followers keep fetching (a
// proposal commits), a client that reads its answers still gets records,
// and DescribeQuorum answers.
func TestClientsThatNeverReadShareOneMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and fills its log")
	}
	// The least budget there is (and a frame limit the code before the
	// budget accepted with it).
	nodes := startBenchQuorumWith(t, 3, map[string]string{
		"queued.max.request.bytes": "20971520", "socket.request.max.bytes": "1048576"})
	leader := waitBenchLeader(t, nodes, 60*time.Second)
	rec := paddedConfigRecord(t, 32<<10)
	batch := make([]metadata.Record, 16)
	for i := range batch {
		batch[i] = rec
	}
	for range 4 { // 2 MiB of records
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := leader.Propose(ctx, batch); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	var addr string
	for _, n := range nodes {
		if n.node == leader {
			addr = n.srv.Addr("CONTROLLER").String()
		}
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID, fetch.MaxBytes = -1, 8<<20
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.FetchRequestTopicPartition{{
		Partition: 0, CurrentLeaderEpoch: leader.Status().Epoch, FetchOffset: 0, PartitionMaxBytes: 8 << 20}}}}
	var pipelined []byte
	for corr := int32(1); corr <= 200; corr++ {
		pipelined = protocol.AppendFrame(pipelined, fetch.AppendTo(protocol.AppendRequestHeader(nil, fetch, corr, "hog")))
	}
	base := heapInUse()

	const hogs = 16
	for range hogs {
		hog, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer hog.Close()
		go func() {
			// Blocks once the node stops reading; the deadline ends it.
			hog.SetWriteDeadline(time.Now().Add(10 * time.Second))
			hog.Write(pipelined)
		}()
	}
	// Sample while the node takes on what it will for the hogs.
	peak := uint64(0)
	for range 40 {
		peak = max(peak, heapInUse())
		time.Sleep(50 * time.Millisecond)
	}
	grew := int64(peak) - int64(base)
	t.Logf("%d clients that never read: heap grew %.1f MiB", hogs, float64(grew)/(1<<20))
	// 20 MiB of budget and a small overdraft per client, with room for the
	// garbage collector's slack; each client alone used to hold 32 MiB.
	if grew > 96<<20 {
		t.Fatalf("heap grew by %d MiB for %d clients that read nothing", grew>>20, hogs)
	}
	// The followers fetch from the leader whose budget the hogs hold.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := leader.Propose(ctx, []metadata.Record{&metadata.NoOpRecord{}}); err != nil {
		t.Fatalf("a proposal did not commit while clients held the budget: %v", err)
	}
	reader := dial(t, addr)
	reader.SetDeadline(time.Now().Add(2 * time.Minute))
	reader.send(fetch, 1)
	_, resp := reader.recv(fetch)
	if got := len(resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches); got == 0 {
		t.Fatal("a client that reads its answers was fetched no records while the budget was held")
	}
	describe := kmsg.NewPtrDescribeQuorumRequest()
	describe.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	reader.send(describe, 2)
	if corr, _ := reader.recv(describe); corr != 2 {
		t.Fatalf("DescribeQuorum answered corr %d", corr)
	}
}

// A frame of any bulk request whose decoded form could take more than the
// whole budget is refused from its size prefix and key, before a byte of
// its body is read or allocated, with a reason naming the setting; a
// bulk frame that fits is still read.
func TestFrameThatCouldDecodeOverTheBudgetIsRefusedBeforeItsBody(t *testing.T) {
	logs := &logBuffer{}
	// Frames up to 20 MiB are read; the budget holds 20 MiB of charge, one
	// frame of 1 MiB.
	_, addr, _ := startServerWith(t, map[string]string{
		"socket.request.max.bytes": "20971520", "queued.max.request.bytes": "20971520"}, logs)
	const over = 20971520/decodeFactor + 1
	keys := make([]int16, 0, len(bulkRequests))
	for k := range bulkRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		for _, size := range []int{over, 20971520} {
			c := dial(t, addr)
			c.raw(binary.BigEndian.AppendUint32(nil, uint32(size)))
			c.raw(binary.BigEndian.AppendUint16(nil, uint16(key))) // and nothing more
			if !closedByServer(c, 10*time.Second) {
				t.Fatalf("a %d-byte %s frame was waited for", size, kmsg.NameForKey(key))
			}
			want := fmt.Sprintf("frame of %d bytes for %s (key %d) may decode into up to %d bytes, more than queued.max.request.bytes (20971520)",
				size, kmsg.NameForKey(key), key, size*decodeFactor)
			if !strings.Contains(logs.String(), want) {
				t.Fatalf("the refusal was not logged as %q:\n%s", want, logs.String())
			}
		}
	}
	// One that fits is read (and refused, its body being zeros, for that).
	fits := dial(t, addr)
	body := make([]byte, over-1)
	binary.BigEndian.PutUint16(body, 19)
	fits.raw(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	fits.raw(body)
	if !closedByServer(fits, 10*time.Second) {
		t.Fatal("a zero CreateTopics body was not refused")
	}
	if strings.Contains(logs.String(), fmt.Sprintf("frame of %d bytes", len(body))) {
		t.Fatal("a frame that fits the budget was refused for its size")
	}
	if other := dial(t, addr); !answered(t, other, 1) {
		t.Fatal("another client was not served after the refusals")
	}
}
