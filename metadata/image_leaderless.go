package metadata

import (
	"bytes"
	"cmp"
	"slices"
)

// leaderlessIndex lists the partitions without a leader, so that an
// unfencing broker, which may give any of them a leader, does not scan
// every partition (and sort every topic id) under the controller's lock.
// Like replicaIndex it is built on the first LeaderlessPartitions and then
// only appended to, when a PartitionRecord or PartitionChangeRecord leaves a
// partition leaderless; entries that no longer hold, and repeats, are
// dropped when it is read, or when it has doubled. Appending alone keeps it
// right across a rolled-back transaction: a dropped entry is never wanted
// back, since compaction never runs inside one.
type leaderlessIndex struct {
	keys      []partitionKey
	compacted int
}

// noteLeader records partition id of t getting leader (-1: none).
func (im *Image) noteLeader(t *Topic, id, leader int32) {
	x := im.leaderless
	if x == nil || leader != -1 {
		return
	}
	x.keys = append(x.keys, partitionKey{t.ID, id})
	if im.journal == nil && len(x.keys) > 2*x.compacted+1024 {
		im.compactLeaderless()
	}
}

// compactLeaderless keeps the entries that hold, once each, in topic id
// and partition order.
func (im *Image) compactLeaderless() {
	x := im.leaderless
	live := x.keys[:0]
	for _, k := range x.keys {
		t := im.Topics[k.topic]
		if t != nil && int(k.partition) < len(t.Partitions) && t.Partitions[k.partition].Exists && t.Partitions[k.partition].Leader == -1 {
			live = append(live, k)
		}
	}
	slices.SortFunc(live, func(a, b partitionKey) int {
		return cmp.Or(bytes.Compare(a.topic[:], b.topic[:]), cmp.Compare(a.partition, b.partition))
	})
	live = slices.Compact(live)
	clear(x.keys[len(live):])
	x.keys, x.compacted = live, len(live)
}

// LeaderlessPartitions returns the partitions that have no leader, sorted
// by topic id and partition id. The result is valid until the image
// changes.
func (im *Image) LeaderlessPartitions() []TopicPartition {
	if im.leaderless == nil {
		im.leaderless = &leaderlessIndex{}
		for _, t := range im.Topics {
			for i := range t.Partitions {
				if p := &t.Partitions[i]; p.Exists && p.Leader == -1 {
					im.leaderless.keys = append(im.leaderless.keys, partitionKey{t.ID, int32(i)})
				}
			}
		}
	}
	im.compactLeaderless()
	out := make([]TopicPartition, len(im.leaderless.keys))
	for i, k := range im.leaderless.keys {
		out[i] = TopicPartition{Topic: im.Topics[k.topic], Partition: k.partition}
	}
	return out
}
