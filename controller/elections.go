package controller

import (
	"slices"

	"github.com/kraftd/kraftd/metadata"
)

// electionCounts are the leader elections the committed records made since
// this process started, counted as Apache's ControllerMetadataMetrics
// counts them for its ControllerStats meters: a PartitionChangeRecord
// that marks the leader RECOVERING is an unclean election, and one whose
// new leader was in the partition's eligible leader replicas (KIP-966) an
// election from the ELR. Every controller counts the records it replays;
// a snapshot loaded counts nothing, as Apache's loader sees no delta.
type electionCounts struct {
	unclean, fromELR int64
}

// countElection looks at one record before the image applies it, so that the
// partition's ELR is the one the change elected from. Called under c.mu.
func (c *Controller) countElection(rec metadata.Record) {
	r, ok := rec.(*metadata.PartitionChangeRecord)
	if !ok {
		return
	}
	if r.LeaderRecoveryState == recovering {
		c.elections.unclean++
	}
	if r.Leader < 0 {
		return // -2: unchanged; -1: no leader
	}
	t, ok := c.image.Topics[r.TopicId]
	if !ok || r.PartitionId < 0 || int(r.PartitionId) >= len(t.Partitions) {
		return // the image rejects it; Replay reports that
	}
	if slices.Contains(t.Partitions[r.PartitionId].EligibleLeaderReplicas(), r.Leader) {
		c.elections.fromELR++
	}
}
