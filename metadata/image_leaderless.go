package metadata

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
	x.keys = im.compactKeys(x.keys, func(p *Partition) bool { return p.Leader == -1 })
	x.compacted = len(x.keys)
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
