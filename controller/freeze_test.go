package controller

import (
	"testing"

	"github.com/kraftd/kraftd/metadata"
)

// TestFreezeImageOnlyAtTheAppliedOffset: the committed image is frozen
// only for the offset it was replayed to, and the frozen copy keeps that
// image while replay goes on.
func TestFreezeImageOnlyAtTheAppliedOffset(t *testing.T) {
	c := New(1, nil)
	topic := metadata.Uuid{1}
	recs := []metadata.Record{
		&metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 27},
		&metadata.TopicRecord{Name: "t", TopicId: topic},
		&metadata.PartitionRecord{TopicId: topic, PartitionId: 0, Replicas: []int32{1}, Isr: []int32{1}, Leader: 1},
	}
	for i, r := range recs {
		if err := c.Replay(int64(i), r); err != nil {
			t.Fatal(err)
		}
	}
	if im := c.FreezeImage(1); im != nil {
		t.Fatal("froze an image replayed to 2 for offset 1")
	}
	frozen := c.FreezeImage(2)
	if frozen == nil {
		t.Fatal("no frozen image at the applied offset")
	}
	before := frozen.Hash()
	if err := c.Replay(3, &metadata.PartitionChangeRecord{TopicId: topic, PartitionId: 0, Leader: -1, LeaderRecoveryState: -1}); err != nil {
		t.Fatal(err)
	}
	if frozen.Hash() != before || frozen.Topics[topic].Partitions[0].Leader != 1 {
		t.Fatal("replay changed the frozen image")
	}
}
