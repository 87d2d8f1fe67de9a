package controller

import (
	"iter"
	"slices"
	"strconv"

	"github.com/kraftd/kraftd/metadata"
)

// noLeader is the leader id of a partition without a leader; noLeaderChange
// is PartitionChangeRecord's "leader unchanged".
const (
	noLeader       int32 = -1
	noLeaderChange int32 = -2
)

// Leader recovery states (PartitionRecord.LeaderRecoveryState).
const (
	recovered  int8 = 0
	recovering int8 = 1
)

// Directory ids with a reserved meaning (Apache's DirectoryId).
var (
	dirMigrating  = metadata.Uuid{}
	dirUnassigned = metadata.Uuid{15: 1}
	dirLost       = metadata.Uuid{15: 2}
)

// Record versions by metadata.version.
const (
	mvELRRecords      int16 = 23 // 4.0-IV1: PartitionRecord/PartitionChangeRecord v2
	mvIsrShrinkNoBump int16 = 12 // 3.6-IV0: an ISR shrink no longer bumps the leader epoch
	mvZkMigration     int16 = 8  // 3.4-IV0: RegisterBrokerRecord v2
)

func partitionRecordVersion(mv int16) int16 {
	switch {
	case mv >= mvELRRecords:
		return 2
	case mv >= MVDirectoryAssignment:
		return 1
	}
	return 0
}

func registerBrokerRecordVersion(mv int16) int16 {
	switch {
	case mv >= MVCordonedLogDirs:
		return 4
	case mv >= MVDirectoryAssignment:
		return 3
	case mv >= mvZkMigration:
		return 2
	}
	return 1
}

// election is how a partition change may pick a leader.
type election int

const (
	electAny       election = iota // keep a valid leader, else the first valid replica
	electPreferred                 // the first replica if valid, else as electAny
	electUnclean                   // as electAny, then any live replica (may lose data)
)

// partitionChange computes the PartitionChangeRecord that moves a partition
// towards a target ISR, electing a leader as needed. It follows the rules of
// Apache's PartitionChangeBuilder: the current leader stays while it is a
// valid choice; a valid leader is in the target ISR (or, with an empty ISR
// and eligible leader replicas on, in the ELR) and acceptable (alive);
// an unclean election resets the ISR to the new leader and marks the
// partition RECOVERING.
type partitionChange struct {
	part       metadata.Partition
	topicID    metadata.Uuid
	partition  int32
	acceptable func(int32) bool
	targetIsr  []int32
	election   election
	elr        bool // eligible leader replicas enabled
	minIsr     int
	// uncleanShutdown replicas may not stay in the ELR.
	uncleanShutdown []int32
	targetRecovery  int8
	mv              int16
	// targetReplicas, targetRemoving and targetAdding are the assignment
	// the change moves to; nil means the partition's own (see
	// reassign.go). A reassignment that the target ISR lets finish
	// finishes in the same change.
	targetReplicas, targetRemoving, targetAdding []int32
	// dirOf is the log directory a replica new to the partition gets;
	// nil leaves directories alone (tests without an image).
	dirOf func(int32) metadata.Uuid

	targetElr, targetLastKnownElr []int32
}

func newPartitionChange(im *metadata.Image, t *metadata.Topic, id int32, acceptable func(int32) bool) *partitionChange {
	p := t.Partitions[id]
	// No leader from a replica whose directory failed (Apache's
	// LeaderAcceptor), whatever the caller accepts.
	accept := func(r int32) bool { return acceptable(r) && hostsOnline(im, &p, r) }
	return &partitionChange{
		part: p, topicID: t.ID, partition: id, acceptable: accept,
		targetIsr: p.Isr, election: electAny, elr: elrEnabled(im), minIsr: effectiveMinIsr(im, t.Name),
		targetRecovery: p.LeaderRecoveryState, mv: metadataVersion(im),
		dirOf: func(r int32) metadata.Uuid { return defaultDir(im, r) },
	}
}

func (b *partitionChange) validLeader(r int32) bool {
	if r < 0 {
		return false
	}
	in := slices.Contains(b.targetIsr, r) || (len(b.targetIsr) == 0 && slices.Contains(b.targetElr, r))
	return in && b.acceptable(r)
}

// electLeader returns the chosen leader (noLeader if none) and whether the
// choice is unclean.
func (b *partitionChange) electLeader() (int32, bool) {
	replicas := b.targetReplicas
	if b.election == electPreferred {
		if len(replicas) > 0 && b.validLeader(replicas[0]) {
			return replicas[0], false
		}
		if b.validLeader(b.part.Leader) {
			return b.part.Leader, false
		}
		for _, r := range replicas[min(1, len(replicas)):] {
			if b.validLeader(r) {
				return r, false
			}
		}
		return noLeader, false
	}
	if b.validLeader(b.part.Leader) {
		return b.part.Leader, false
	}
	for _, r := range replicas {
		if b.validLeader(r) {
			return r, false
		}
	}
	if b.election == electUnclean {
		for _, r := range replicas {
			if b.acceptable(r) {
				return r, true
			}
		}
	}
	return noLeader, false
}

// populateElr keeps the replicas leaving an ISR that is below min.insync
// as eligible leaders (KIP-966).
func (b *partitionChange) populateElr() {
	if !b.elr {
		return
	}
	if len(b.targetIsr) >= b.minIsr {
		b.targetElr, b.targetLastKnownElr = []int32{}, []int32{}
		return
	}
	var candidates []int32
	for _, r := range append(slices.Clone(b.targetElr), b.part.Isr...) {
		if !slices.Contains(candidates, r) {
			candidates = append(candidates, r)
		}
	}
	elr := []int32{}
	for _, r := range candidates {
		if !slices.Contains(b.targetIsr, r) && !slices.Contains(b.uncleanShutdown, r) {
			elr = append(elr, r)
		}
	}
	lastKnown := []int32{}
	for _, r := range append(candidates, b.targetLastKnownElr...) {
		if !slices.Contains(b.targetIsr, r) && !slices.Contains(elr, r) && !slices.Contains(lastKnown, r) {
			lastKnown = append(lastKnown, r)
		}
	}
	slices.Sort(elr)
	slices.Sort(lastKnown)
	b.targetElr, b.targetLastKnownElr = elr, lastKnown
}

// build returns the change record, or nil when nothing changes.
func (b *partitionChange) build() *metadata.PartitionChangeRecord {
	rec := &metadata.PartitionChangeRecord{}
	rec.Default()
	rec.SetVersion(partitionRecordVersion(b.mv))
	rec.TopicId, rec.PartitionId = b.topicID, b.partition
	b.defaultAssignment()
	b.completeReassignment()
	b.targetElr = orEmpty(b.part.EligibleLeaderReplicas())
	b.targetLastKnownElr = orEmpty(b.part.LastKnownElr())
	b.populateElr()

	leader, unclean := b.electLeader()
	if leader != b.part.Leader {
		if slices.Contains(b.targetElr, leader) {
			b.targetIsr = []int32{leader}
			b.targetElr = slices.DeleteFunc(slices.Clone(b.targetElr), func(r int32) bool { return r == leader })
		}
		rec.Leader = leader
		if unclean {
			rec.Isr = []int32{leader}
			if b.part.LeaderRecoveryState != recovering {
				rec.LeaderRecoveryState = recovering
			}
		}
	}

	// Brokers leaving the replica list must see a new leader epoch.
	if rec.Leader == noLeaderChange && !containsAll(b.targetReplicas, b.part.Replicas) {
		rec.Leader = b.part.Leader
	}
	if rec.Isr != nil || !b.elr {
		b.targetElr, b.targetLastKnownElr = []int32{}, []int32{}
	}
	if !slices.Equal(b.targetElr, orEmpty(b.part.EligibleLeaderReplicas())) {
		rec.EligibleLeaderReplicas = b.targetElr
	}
	if !slices.Equal(b.targetLastKnownElr, orEmpty(b.part.LastKnownElr())) {
		rec.LastKnownElr = b.targetLastKnownElr
	}
	// Without ELR an ISR never becomes empty: the last member stays, so it
	// is the one to come back as leader.
	if rec.Isr == nil && (len(b.targetIsr) > 0 || b.elr) && !slices.Equal(b.targetIsr, b.part.Isr) {
		rec.Isr = orEmpty(slices.Clone(b.targetIsr))
	}
	if b.mv < mvIsrShrinkNoBump && rec.Leader == noLeaderChange && rec.Isr != nil && !containsAll(rec.Isr, b.part.Isr) {
		rec.Leader = b.part.Leader
	}
	b.setAssignmentChanges(rec)
	if b.targetRecovery != b.part.LeaderRecoveryState && rec.LeaderRecoveryState == -1 {
		rec.LeaderRecoveryState = b.targetRecovery
	}
	if b.mv < mvELRRecords {
		rec.EligibleLeaderReplicas, rec.LastKnownElr = nil, nil
	}
	if rec.Leader == noLeaderChange && rec.Isr == nil && rec.LeaderRecoveryState == -1 &&
		rec.EligibleLeaderReplicas == nil && rec.LastKnownElr == nil && rec.Replicas == nil && rec.Directories == nil &&
		rec.RemovingReplicas == nil && rec.AddingReplicas == nil {
		return nil
	}
	return rec
}

func orEmpty(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

func containsAll(set, of []int32) bool {
	for _, r := range of {
		if !slices.Contains(set, r) {
			return false
		}
	}
	return true
}

// brokerActive is Apache's ClusterControlManager.isActive: registered,
// unfenced and not shutting down.
func brokerActive(im *metadata.Image, id int32) bool {
	b, ok := im.Brokers[id]
	return ok && !b.Fenced && !b.InControlledShutdown
}

// leaderAndIsrUpdates generates the partition changes that follow a broker
// state change, over the partitions of candidates that which selects:
// remove is taken out of every ISR and may not lead; add may lead even
// though the image still shows it fenced (it is being unfenced by the same
// batch). candidates come in topic id, then partition order, so the records
// do too.
func leaderAndIsrUpdates(im *metadata.Image, remove, add, uncleanShutdown int32, s Settings, candidates iter.Seq[metadata.TopicPartition], which func(p *metadata.Partition) bool) []metadata.Record {
	acceptable := func(r int32) bool {
		return r != remove && r != uncleanShutdown && (r == add || brokerActive(im, r))
	}
	var out []metadata.Record
	for tp := range candidates {
		t, pid := tp.Topic, tp.Partition
		p := &t.Partitions[pid]
		if !p.Exists || !which(p) {
			continue
		}
		b := newPartitionChange(im, t, pid, acceptable)
		if uncleanElectionEnabled(im, t.Name, s) {
			b.election = electUnclean
		}
		if uncleanShutdown >= 0 {
			b.uncleanShutdown = []int32{uncleanShutdown}
		}
		b.targetIsr = slices.DeleteFunc(slices.Clone(p.Isr), func(r int32) bool { return r == remove || r == uncleanShutdown })
		if rec := b.build(); rec != nil {
			out = append(out, rec)
		}
	}
	return out
}

// replicaPartitions are the partitions whose replicas hold broker, from the
// image's broker index: a broker leads, and is in the ISR or ELR of, only
// partitions it is a replica of, so its failure touches no others, and
// there is no need to scan every partition (at a million, 150 ms a fencing).
func replicaPartitions(im *metadata.Image, broker int32) iter.Seq[metadata.TopicPartition] {
	return slices.Values(im.PartitionsOfBroker(broker))
}

func inIsr(b int32) func(p *metadata.Partition) bool {
	return func(p *metadata.Partition) bool { return slices.Contains(p.Isr, b) }
}

func inElr(b int32) func(p *metadata.Partition) bool {
	return func(p *metadata.Partition) bool { return slices.Contains(p.EligibleLeaderReplicas(), b) }
}

func leaderless(p *metadata.Partition) bool { return p.Leader == noLeader }

// leadsAny reports whether broker b leads at least one partition.
func leadsAny(im *metadata.Image, b int32) bool {
	for _, tp := range im.PartitionsOfBroker(b) {
		if p := &tp.Topic.Partitions[tp.Partition]; p.Exists && p.Leader == b {
			return true
		}
	}
	return false
}

func sortedTopicIDs(im *metadata.Image) []metadata.Uuid {
	ids := make([]metadata.Uuid, 0, len(im.Topics))
	for id := range im.Topics {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareUuid)
	return ids
}

// compareUuid orders ids by their bytes, as topic ids are ordered in
// records and directory ids in a registration.
func compareUuid(a, b metadata.Uuid) int { return slices.Compare(a[:], b[:]) }

// Config resource types (Apache's ConfigResource.Type ids).
const (
	resourceTopic  int8 = 2
	resourceBroker int8 = 4
)

// effectiveMinIsr is the topic's min.insync.replicas, else the cluster
// default, else 1.
func effectiveMinIsr(im *metadata.Image, topic string) int {
	if v, ok := dynamicConfig(im, topic, "min.insync.replicas"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

func uncleanElectionEnabled(im *metadata.Image, topic string, s Settings) bool {
	if v, ok := dynamicConfig(im, topic, "unclean.leader.election.enable"); ok {
		return v == "true"
	}
	return s.UncleanLeaderElection
}

// dynamicConfig looks a key up on the topic, then the cluster-wide broker
// default (the broker resource named "").
func dynamicConfig(im *metadata.Image, topic, key string) (string, bool) {
	if v, ok := im.Configs[metadata.ConfigResource{ResourceType: resourceTopic, Name: topic}][key]; ok {
		return v, true
	}
	v, ok := im.Configs[metadata.ConfigResource{ResourceType: resourceBroker, Name: ""}][key]
	return v, ok
}
