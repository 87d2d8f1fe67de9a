package quorum_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/quorum"
)

// observerFetch steps a Fetch v18 from replica id at the log end, answered
// at once (MaxWaitMs 0).
func observerFetch(t *testing.T, n *quorum.Node, id, leaderEpoch int32) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaState.ID = 18, id
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch, p.HighWatermark = leaderEpoch, 10, 1, -1
	req.Topics = []kmsg.FetchRequestTopic{{Topic: quorum.MetadataTopic, TopicID: quorum.MetadataTopicID, Partitions: []kmsg.FetchRequestTopicPartition{p}}}
	if err := n.Step(quorum.Message{From: id, To: 1, ReqID: 1, Request: req}); err != nil {
		t.Fatal(err)
	}
	drain(n)
}

// describedObservers lists the observer ids in the leader's DescribeQuorum
// answer.
func describedObservers(t *testing.T, n *quorum.Node) []int32 {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	if err := n.Step(quorum.Message{From: -1, To: 1, ReqID: 5, Request: req}); err != nil {
		t.Fatal(err)
	}
	for _, m := range drain(n) {
		if resp, ok := m.Response.(*kmsg.DescribeQuorumResponse); ok {
			var ids []int32
			for _, o := range resp.Topics[0].Partitions[0].Observers {
				ids = append(ids, o.ReplicaID)
			}
			return ids
		}
	}
	t.Fatal("no DescribeQuorum answer")
	return nil
}

// TestLeaderForgetsIdleObservers: 10,000 forged observer ids fetch once;
// the leader kept every one for the whole epoch (issue 11, defect 8: 46
// MiB for 50,000). Like Apache's LeaderState it now forgets an observer 5
// minutes after its last fetch; observer 7, which keeps fetching, stays,
// and DescribeQuorum goes on listing it.
func TestLeaderForgetsIdleObservers(t *testing.T) {
	leader, epoch := singleVoterLeader(t, &shapedLog{start: 0, end: 10, epochs: []epochStart{{1, 0}}})
	now := int64(10_000)
	leader.Tick(now)
	drain(leader)
	for id := int32(1000); id < 11000; id++ {
		observerFetch(t, leader, id, epoch)
	}
	observerFetch(t, leader, 7, epoch)
	if got := quorum.TrackedObservers(leader); got != 10_001 {
		t.Fatalf("the leader tracks %d observers, want 10001", got)
	}
	// Four minutes later every observer is still remembered.
	for end := now + 4*60*1000; now < end; now += 1000 {
		leader.Tick(now)
		drain(leader)
		observerFetch(t, leader, 7, epoch)
	}
	if got := quorum.TrackedObservers(leader); got != 10_001 {
		t.Fatalf("after 4 minutes the leader tracks %d observers, want 10001", got)
	}
	// Five minutes and a sweep after their fetch, only observer 7 is left.
	for end := now + 70*1000; now < end; now += 1000 {
		leader.Tick(now)
		drain(leader)
		observerFetch(t, leader, 7, epoch)
	}
	if got := quorum.TrackedObservers(leader); got != 1 {
		t.Fatalf("after 5 minutes and more the leader tracks %d observers, want 1", got)
	}
	if ids := describedObservers(t, leader); len(ids) != 1 || ids[0] != 7 {
		t.Fatalf("DescribeQuorum lists observers %v, want [7]", ids)
	}
	// A forgotten observer that comes back is tracked again.
	observerFetch(t, leader, 1000, epoch)
	if ids := describedObservers(t, leader); len(ids) != 2 || ids[0] != 7 || ids[1] != 1000 {
		t.Fatalf("DescribeQuorum lists observers %v, want [7 1000]", ids)
	}
}
