package quorum_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/quorum"
)

// In a static quorum (kraft.version 0) Apache's DescribeQuorum shows every
// voter, the leader included, with a zero directory id: a voter is known by
// its key in the voter set, and controller.quorum.voters carries no
// directory ids. An observer is shown with the directory it fetches from.
// A kraftd leader showed each voter's own directory id, so
// kafka-metadata-quorum printed different voters depending on which
// implementation led.
func TestDescribeQuorumStaticVotersHaveNoDirectoryID(t *testing.T) {
	leader, epoch := singleVoterLeader(t, &shapedLog{start: 0, end: 10, epochs: []epochStart{{1, 0}}})
	// Observer 9 fetches from directory {9}.
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaState.ID = 18, 9
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch, p.HighWatermark = epoch, 10, 1, -1
	p.ReplicaDirectoryID = [16]byte{9}
	req.Topics = []kmsg.FetchRequestTopic{{Topic: quorum.MetadataTopic, TopicID: quorum.MetadataTopicID, Partitions: []kmsg.FetchRequestTopicPartition{p}}}
	if err := leader.Step(quorum.Message{From: 9, To: 1, ReqID: 1, Request: req}); err != nil {
		t.Fatal(err)
	}
	drain(leader)

	dq := kmsg.NewPtrDescribeQuorumRequest()
	dq.Version = 2
	dq.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	if err := leader.Step(quorum.Message{From: -1, To: 1, ReqID: 2, Request: dq}); err != nil {
		t.Fatal(err)
	}
	var resp *kmsg.DescribeQuorumResponse
	for _, m := range drain(leader) {
		if r, ok := m.Response.(*kmsg.DescribeQuorumResponse); ok {
			resp = r
		}
	}
	if resp == nil {
		t.Fatal("no DescribeQuorum answer")
	}
	part := resp.Topics[0].Partitions[0]
	if len(part.CurrentVoters) != 1 || part.CurrentVoters[0].ReplicaDirectoryID != [16]byte{} {
		t.Errorf("voters %+v: want leader 1 with a zero directory id", part.CurrentVoters)
	}
	if len(part.Observers) != 1 || part.Observers[0].ReplicaDirectoryID != [16]byte{9} {
		t.Errorf("observers %+v: want observer 9 with its directory id", part.Observers)
	}
}
