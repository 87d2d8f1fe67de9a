package compat

import (
	"testing"
	"time"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

// leaderBatches encodes a PartitionRecord led by broker 101, and a second
// batch fencing 101 and moving that partition's leadership to 102.
func leaderBatches(t testing.TB) (created, moved []byte) {
	topic := [16]byte{1, 2, 3}
	p := &metadata.PartitionRecord{}
	p.Default()
	p.TopicId, p.PartitionId, p.Replicas, p.Isr, p.Leader = topic, 0, []int32{101, 102, 103}, []int32{101, 102, 103}, 101
	created = batch.Builder{BaseOffset: 0, LeaderEpoch: 1, Timestamp: 1000}.Encode(nil, []batch.Record{{Value: metadata.EncodeValue(p)}})
	fence := &metadata.BrokerRegistrationChangeRecord{}
	fence.Default()
	fence.BrokerId, fence.BrokerEpoch, fence.Fenced = 101, 5, 1
	change := &metadata.PartitionChangeRecord{}
	change.Default()
	change.TopicId, change.PartitionId, change.Leader, change.Isr = topic, 0, 102, []int32{102, 103}
	moved = batch.Builder{BaseOffset: 1, LeaderEpoch: 1, Timestamp: 1040}.Encode(nil,
		[]batch.Record{{Value: metadata.EncodeValue(fence)}, {Value: metadata.EncodeValue(change)}})
	return created, moved
}

func TestLeaderTrackerSeesLeadershipLeave(t *testing.T) {
	t.Parallel()
	created, moved := leaderBatches(t)
	tr := NewLeaderTracker()
	tr.apply(created, 1)
	if tr.LedBy(101) != 1 || tr.Partitions() != 1 {
		t.Fatalf("after the PartitionRecord: broker 101 leads %d of %d partitions, want 1 of 1", tr.LedBy(101), tr.Partitions())
	}
	led, wait := tr.WatchLeadAway([]int32{101})
	if led != 1 {
		t.Fatalf("watch counts %d partitions led, want 1", led)
	}
	tr.apply(moved, 2)
	if tr.LedBy(101) != 1 {
		t.Fatal("a batch above the high watermark was applied")
	}
	tr.apply(nil, 3)
	res, err := wait(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.LedAt.Sub(res.Fenced); got != 0 || res.Fenced.UnixMilli() != 1040 || res.LastFence.UnixMilli() != 1040 {
		t.Fatalf("fenced at %d, last fence %d, led again %v later; want 1040, 1040, 0", res.Fenced.UnixMilli(), res.LastFence.UnixMilli(), got)
	}
	if tr.LedBy(102) != 1 || tr.LedBy(101) != 0 || res.Offline != 0 {
		t.Fatalf("after the change: 101 leads %d, 102 leads %d, %d offline", tr.LedBy(101), tr.LedBy(102), res.Offline)
	}
}

// FuzzLeaderTrackerApply feeds the tracker arbitrary fetched bytes: it must
// neither panic nor count a partition it did not decode.
func FuzzLeaderTrackerApply(f *testing.F) {
	created, moved := leaderBatches(f)
	f.Add(created)
	f.Add(append(append([]byte{}, created...), moved...))
	f.Add(moved[:len(moved)-3])
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := NewLeaderTracker()
		_, wait := tr.WatchLeadAway([]int32{101})
		tr.apply(b, 1<<40)
		if _, err := wait(0); err == nil && tr.LedBy(101) != 0 {
			t.Fatalf("watch ended with broker 101 leading %d partitions", tr.LedBy(101))
		}
		total := 0
		for _, id := range []int32{-1, 101, 102, 103} {
			total += tr.LedBy(id)
		}
		if total > tr.Partitions() {
			t.Fatalf("%d partitions counted among 4 leaders, %d known", total, tr.Partitions())
		}
	})
}
