package server

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/protocol"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A client pipelines thousands of Fetch requests, each answered with ~2 MiB
// of records, and never reads an answer. The node stops reading from it
// once it is owed maxOwedPerConn, so its heap stays bounded, and another
// client is still answered.
func TestClientThatNeverReadsItsFetchesKeepsMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and fills its log")
	}
	nodes := startBenchQuorum(t, 1)
	leader := waitBenchLeader(t, nodes, 30*time.Second)
	rec := paddedConfigRecord(t, 32<<10)
	batch := make([]metadata.Record, 16)
	for i := range batch {
		batch[i] = rec
	}
	for range 4 { // 2 MiB of records, in one segment
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := leader.Propose(ctx, batch); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	addr := nodes[0].srv.Addr("CONTROLLER").String()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID, fetch.MaxBytes = -1, 8<<20
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.FetchRequestTopicPartition{{
		Partition: 0, CurrentLeaderEpoch: leader.Status().Epoch, FetchOffset: 0, PartitionMaxBytes: 8 << 20}}}}

	// The answer really is large: read one.
	probe := dial(t, addr)
	probe.send(fetch, 0)
	_, resp := probe.recv(fetch)
	size := len(resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches)
	if size < 1<<20 {
		t.Fatalf("a fetch is answered with only %d bytes of records", size)
	}
	base := heapInUse()

	hog, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer hog.Close()
	var all []byte
	for corr := int32(1); corr <= 10000; corr++ {
		all = protocol.AppendFrame(all, fetch.AppendTo(protocol.AppendRequestHeader(nil, fetch, corr, "hog")))
	}
	written := make(chan int, 1)
	go func() {
		// Blocks once the node stops reading; the deadline ends it.
		hog.SetWriteDeadline(time.Now().Add(5 * time.Second))
		n, _ := hog.Write(all)
		written <- n
	}()
	sent := <-written // all of them, if the socket buffers hold them
	// Sample while the node takes on what it will for the hog.
	peak := uint64(0)
	for range 40 {
		peak = max(peak, heapInUse())
		time.Sleep(50 * time.Millisecond)
	}
	grew := int64(peak) - int64(base)
	t.Logf("fetch answers of %d bytes; the hog wrote %d of %d request bytes; heap grew %.1f MiB", size, sent, len(all), float64(grew)/(1<<20))
	// maxOwedPerConn (32 MiB), with room for the garbage collector's slack;
	// a literal, so that loosening the bound cannot loosen the test.
	if grew > 96<<20 {
		t.Fatalf("heap grew by %d bytes for one client that reads nothing", grew)
	}
	other := dial(t, addr)
	other.send(fetch, 1)
	if corr, _ := other.recv(fetch); corr != 1 {
		t.Fatalf("the other client got corr %d", corr)
	}
}

// Frames announced at a large size and then stalled hold no more than
// queued.max.request.bytes between them, counted at decodeFactor times
// their size: only one of these fits at a time. Small requests still pass.
func TestDecodeBudgetBoundsFramesBeingRead(t *testing.T) {
	s, addr, _ := startServerWith(t, map[string]string{"queued.max.request.bytes": "20971520"}, nil)
	const size = 700 << 10
	var stalled []*testConn
	for range 4 {
		c := dial(t, addr)
		c.raw(binary.BigEndian.AppendUint32(nil, size))
		c.raw(make([]byte, 100)) // and nothing more
		stalled = append(stalled, c)
	}
	if other := dial(t, addr); !answered(t, other, 1) {
		t.Fatal("a small request was held up behind stalled large frames")
	}
	// Each stalled frame finishes in turn; each is refused (its body is
	// zeros), which frees the budget for the next.
	for _, c := range stalled {
		c.raw(make([]byte, size-100))
	}
	for _, c := range stalled {
		if !closedByServer(c, 10*time.Second) {
			t.Fatal("a completed frame was never read")
		}
	}
	if peak := s.decoding.peakHeld(); peak > decodeCharge(size)+decodeCharge(smallFrame) {
		t.Fatalf("%d bytes of decode budget were held at once: more than one stalled frame was read at a time", peak)
	}
}
