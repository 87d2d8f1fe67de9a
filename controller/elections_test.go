package controller

import (
	"testing"

	"github.com/kraftd/kraftd/metadata"
)

// TestElectionCounts replays the records of an unclean election and of an
// election from the ELR, and changes that elect nobody: only the first two
// count, each in its own counter, and a snapshot loaded counts nothing.
func TestElectionCounts(t *testing.T) {
	c := New(1, nil)
	topic := metadata.Uuid{0: 7, 15: 7}
	recs := []metadata.Record{
		&metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 27},
		&metadata.FeatureLevelRecord{Name: ELRFeature, FeatureLevel: 1},
		&metadata.TopicRecord{Name: "t", TopicId: topic},
		&metadata.PartitionRecord{Version: 2, PartitionId: 0, TopicId: topic, Replicas: []int32{1, 2, 3}, Isr: []int32{1}, Leader: 1,
			EligibleLeaderReplicas: []int32{2}, LastKnownElr: []int32{}},
		&metadata.PartitionRecord{Version: 2, PartitionId: 1, TopicId: topic, Replicas: []int32{1, 2}, Isr: []int32{1}, Leader: 1},
		// Partition 0: the leader goes; then replica 2, in the ELR, is elected.
		&metadata.PartitionChangeRecord{Version: 2, PartitionId: 0, TopicId: topic, Leader: -1, LeaderRecoveryState: -1},
		&metadata.PartitionChangeRecord{Version: 2, PartitionId: 0, TopicId: topic, Leader: 2, Isr: []int32{2},
			EligibleLeaderReplicas: []int32{}, LeaderRecoveryState: -1},
		// Partition 1: an ISR change without election, then replica 2,
		// outside the ISR and the ELR, elected unclean.
		&metadata.PartitionChangeRecord{Version: 2, PartitionId: 1, TopicId: topic, Leader: -2, Isr: []int32{1}, LeaderRecoveryState: -1},
		&metadata.PartitionChangeRecord{Version: 2, PartitionId: 1, TopicId: topic, Leader: 2, Isr: []int32{2}, LeaderRecoveryState: recovering},
	}
	for i, rec := range recs {
		if err := c.Replay(int64(i), rec); err != nil {
			t.Fatal(err)
		}
	}
	s := c.Stats()
	if s.UncleanLeaderElections != 1 || s.ElectionsFromELR != 1 {
		t.Fatalf("unclean %d, from ELR %d; want 1 and 1", s.UncleanLeaderElections, s.ElectionsFromELR)
	}
	if s.Features[ELRFeature] != 1 || s.Features[MetadataVersionFeature] != 27 {
		t.Fatalf("features %v", s.Features)
	}
	// A snapshot's image is a state, not elections.
	c.LoadSnapshot(int64(len(recs)), metadata.NewImage())
	if s := c.Stats(); s.UncleanLeaderElections != 1 || s.ElectionsFromELR != 1 {
		t.Fatalf("after a snapshot: unclean %d, from ELR %d; want 1 and 1", s.UncleanLeaderElections, s.ElectionsFromELR)
	}
}
