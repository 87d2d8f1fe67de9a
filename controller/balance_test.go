package controller

import (
	"context"
	"testing"

	"github.com/kraftd/kraftd/metadata"
)

func TestBalanceLeadersMovesLeadershipToThePreferredReplica(t *testing.T) {
	c, q, _ := newTestController(t, 27)
	for id := int32(1); id <= 3; id++ {
		register(t, c, q, id)
	}
	topic := metadata.Uuid{7}
	q.write([]metadata.Record{
		&metadata.TopicRecord{Name: "t", TopicId: topic},
		// Led by its second replica, with the preferred one in the ISR.
		&metadata.PartitionRecord{Version: 1, PartitionId: 0, TopicId: topic, Replicas: []int32{1, 2, 3}, Isr: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: 4, PartitionEpoch: 6},
		// Already led by its preferred replica.
		&metadata.PartitionRecord{Version: 1, PartitionId: 1, TopicId: topic, Replicas: []int32{3, 1, 2}, Isr: []int32{3, 1, 2}, Leader: 3, LeaderEpoch: 1, PartitionEpoch: 1},
		// Preferred replica out of the ISR: nothing to do.
		&metadata.PartitionRecord{Version: 1, PartitionId: 2, TopicId: topic, Replicas: []int32{2, 3, 1}, Isr: []int32{3, 1}, Leader: 3, LeaderEpoch: 1, PartitionEpoch: 1},
	})
	moved, err := c.BalanceLeaders(context.Background())
	if err != nil || moved != 1 {
		t.Fatalf("moved %d, err %v; want 1", moved, err)
	}
	change, ok := q.log[len(q.log)-1].(*metadata.PartitionChangeRecord)
	if !ok || change.PartitionId != 0 || change.Leader != 1 {
		t.Fatalf("last record %+v, want partition 0's leader moved to 1", q.log[len(q.log)-1])
	}
	if moved, err := c.BalanceLeaders(context.Background()); err != nil || moved != 0 {
		t.Fatalf("second pass moved %d, err %v; want 0", moved, err)
	}
}
