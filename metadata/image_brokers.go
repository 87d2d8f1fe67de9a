package metadata

import (
	"bytes"
	"cmp"
	"slices"
)

// TopicPartition names a partition of a topic in the image.
type TopicPartition struct {
	Topic     *Topic
	Partition int32
}

// replicaIndex maps each broker to the partitions whose replica list holds
// it, so that the controller finds what a broker failure touches without a
// scan of every partition (148 ms at a million). It is built by one scan on
// the first PartitionsOfBroker, not while loading, where keeping it would
// cost a third of the load time and half the heap again. From then on
// entries are only added, when a PartitionRecord or a PartitionChangeRecord
// sets replicas: ISR, leader and ELR changes, the bulk of a failure's
// delta, cost nothing.
// Entries that no longer hold (replicas moved, topic removed) and repeats
// are dropped when the broker is looked up, or when its list has doubled.
type replicaIndex map[int32]*replicaEntries

type replicaEntries struct {
	keys      []partitionKey
	compacted int // len(keys) after the last compaction
}

type partitionKey struct {
	topic     Uuid
	partition int32
}

// indexReplicas records that partition id of t lists replicas.
func (im *Image) indexReplicas(t *Topic, id int32, replicas []int32) {
	if im.replicas == nil {
		return // not built yet
	}
	for _, b := range replicas {
		e := im.replicas[b]
		if e == nil {
			e = &replicaEntries{}
			im.replicas[b] = e
		}
		e.keys = append(e.keys, partitionKey{t.ID, id})
		// Never inside a transaction: a rollback could bring back what
		// the compaction dropped.
		if im.journal == nil && len(e.keys) > 2*e.compacted+1024 {
			im.compactReplicas(b, e)
		}
	}
}

// compactReplicas keeps the entries of broker b that hold, once each, in
// topic id and partition order.
func (im *Image) compactReplicas(b int32, e *replicaEntries) {
	e.keys = im.compactKeys(e.keys, func(p *Partition) bool { return slices.Contains(p.Replicas, b) })
	e.compacted = len(e.keys)
}

// compactKeys keeps, in place, the keys of existing partitions that hold,
// once each, in topic id and partition order.
func (im *Image) compactKeys(keys []partitionKey, holds func(p *Partition) bool) []partitionKey {
	live := keys[:0]
	for _, k := range keys {
		t := im.Topics[k.topic]
		if t != nil && int(k.partition) < len(t.Partitions) && t.Partitions[k.partition].Exists && holds(&t.Partitions[k.partition]) {
			live = append(live, k)
		}
	}
	slices.SortFunc(live, func(x, y partitionKey) int {
		return cmp.Or(bytes.Compare(x.topic[:], y.topic[:]), cmp.Compare(x.partition, y.partition))
	})
	live = slices.Compact(live)
	clear(keys[len(live):])
	return live
}

// PartitionsOfBroker returns the partitions whose replica list holds
// broker, sorted by topic id and partition id. The partitions a broker
// leads, or whose ISR or ELR holds it, are among them whenever those are
// subsets of the replicas, as in every log Apache's controller or kraftd
// writes; callers select from them (leader, ISR, ELR) as a scan would.
// The result is valid until the image changes.
func (im *Image) PartitionsOfBroker(broker int32) []TopicPartition {
	if im.replicas == nil {
		im.buildReplicaIndex()
	}
	e := im.replicas[broker]
	if e == nil {
		return nil
	}
	im.compactReplicas(broker, e)
	out := make([]TopicPartition, len(e.keys))
	for i, k := range e.keys {
		out[i] = TopicPartition{Topic: im.Topics[k.topic], Partition: k.partition}
	}
	return out
}

// BuildIndexes builds now the indexes PartitionsOfBroker and
// LeaderlessPartitions would build on first use; apply keeps them up to
// date from then on, and Clone copies them. An active controller's
// speculative image is a clone of its committed one, and building the
// replica index there on its first fencing held every operation for 0.4
// s at a million partitions.
func (im *Image) BuildIndexes() {
	if im.replicas == nil {
		im.buildReplicaIndex()
	}
	if im.leaderless == nil {
		im.LeaderlessPartitions()
	}
}

// buildReplicaIndex indexes every partition, sizing each broker's list
// exactly.
func (im *Image) buildReplicaIndex() {
	counts := map[int32]int{}
	for _, t := range im.Topics {
		for i := range t.Partitions {
			for _, b := range t.Partitions[i].Replicas {
				counts[b]++
			}
		}
	}
	im.replicas = make(replicaIndex, len(counts))
	for b, n := range counts {
		im.replicas[b] = &replicaEntries{keys: make([]partitionKey, 0, n), compacted: n}
	}
	for _, t := range im.Topics {
		for i := range t.Partitions {
			if p := &t.Partitions[i]; p.Exists {
				for _, b := range p.Replicas {
					e := im.replicas[b]
					e.keys = append(e.keys, partitionKey{t.ID, int32(i)})
				}
			}
		}
	}
}
