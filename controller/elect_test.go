package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// ElectLeaders answers each partition as Apache's controller does. Broker
// 4 is never registered, so it can neither lead nor stay in an election.
func TestElectLeadersAnswers(t *testing.T) {
	c, q, _ := newTestController(t, 27)
	for id := int32(1); id <= 3; id++ {
		register(t, c, q, id)
	}
	topic := metadata.Uuid{9}
	q.write([]metadata.Record{
		&metadata.TopicRecord{Name: "e", TopicId: topic},
		// 0: the preferred replica leads.
		&metadata.PartitionRecord{Version: 1, PartitionId: 0, TopicId: topic, Replicas: []int32{1, 2}, Isr: []int32{1, 2}, Leader: 1},
		// 1: the preferred replica is in the ISR but does not lead.
		&metadata.PartitionRecord{Version: 1, PartitionId: 1, TopicId: topic, Replicas: []int32{1, 2}, Isr: []int32{1, 2}, Leader: 2},
		// 2: the preferred replica is out of the ISR.
		&metadata.PartitionRecord{Version: 1, PartitionId: 2, TopicId: topic, Replicas: []int32{3, 2}, Isr: []int32{2}, Leader: 2},
		// 3: leaderless, its only ISR member gone, another replica alive.
		&metadata.PartitionRecord{Version: 1, PartitionId: 3, TopicId: topic, Replicas: []int32{4, 3}, Isr: []int32{4}, Leader: -1},
		// 4: leaderless with no live replica.
		&metadata.PartitionRecord{Version: 1, PartitionId: 4, TopicId: topic, Replicas: []int32{4}, Isr: []int32{4}, Leader: -1},
	})
	elect := func(typ int8, topics []kmsg.ElectLeadersRequestTopic) *kmsg.ElectLeadersResponse {
		req := kmsg.NewPtrElectLeadersRequest()
		req.SetVersion(2)
		req.ElectionType, req.Topics = typ, topics
		resp, err := c.ElectLeaders(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	msg := func(p kmsg.ElectLeadersResponseTopicPartition) string {
		if p.ErrorMessage == nil {
			return ""
		}
		return *p.ErrorMessage
	}
	type want struct {
		code int16
		msg  string
	}
	preferred := map[int32]want{
		0: {kerr.ElectionNotNeeded.Code, "Leader election not needed for topic partition."},
		1: {0, ""},
		2: {kerr.PreferredLeaderNotAvailable.Code, "The preferred leader was not available."},
		// The leader is gone and its only ISR member too: a clean election
		// finds nobody.
		3: {kerr.PreferredLeaderNotAvailable.Code, "The preferred leader was not available."},
		4: {kerr.PreferredLeaderNotAvailable.Code, "The preferred leader was not available."},
		7: {kerr.UnknownTopicOrPartition.Code, "No such partition as e-7"},
	}
	resp := elect(electionPreferred, []kmsg.ElectLeadersRequestTopic{{Topic: "e", Partitions: []int32{0, 1, 2, 3, 4, 7}}, {Topic: "nope", Partitions: []int32{0}}})
	for _, p := range resp.Topics[0].Partitions {
		if w := preferred[p.Partition]; p.ErrorCode != w.code || msg(p) != w.msg {
			t.Errorf("preferred e-%d: %d %q, want %d %q", p.Partition, p.ErrorCode, msg(p), w.code, w.msg)
		}
	}
	if p := resp.Topics[1].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code || msg(p) != "No such topic as nope" {
		t.Errorf("unknown topic: %d %q", p.ErrorCode, msg(p))
	}
	if p := c.image.Topics[topic].Partitions[1]; p.Leader != 1 {
		t.Errorf("e-1 led by %d after the preferred election", p.Leader)
	}

	unclean := map[int32]want{
		0: {kerr.ElectionNotNeeded.Code, "Leader election not needed for topic partition."},
		3: {0, ""},
		4: {kerr.EligibleLeadersNotAvailable.Code, "Eligible topic partition leaders are not available."},
	}
	resp = elect(electionUnclean, []kmsg.ElectLeadersRequestTopic{{Topic: "e", Partitions: []int32{0, 3, 4}}})
	for _, p := range resp.Topics[0].Partitions {
		if w := unclean[p.Partition]; p.ErrorCode != w.code || msg(p) != w.msg {
			t.Errorf("unclean e-%d: %d %q, want %d %q", p.Partition, p.ErrorCode, msg(p), w.code, w.msg)
		}
	}
	if p := c.image.Topics[topic].Partitions[3]; p.Leader != 3 || len(p.Isr) != 1 || p.Isr[0] != 3 || p.LeaderRecoveryState != recovering {
		t.Errorf("e-3 after the unclean election: %+v", p)
	}

	// All partitions: those that needed no election are left out, and
	// every topic is listed.
	resp = elect(electionPreferred, nil)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "e" {
		t.Fatalf("all partitions: %+v", resp.Topics)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode == kerr.ElectionNotNeeded.Code {
			t.Errorf("all partitions listed e-%d, which needed no election", p.Partition)
		}
	}
}
