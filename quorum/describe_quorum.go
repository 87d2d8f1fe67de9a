// describe_quorum.go owns the leader's DescribeQuorum answer: voters and
// observers with their fetch positions, and the voters' listeners.

package quorum

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeQuorumResponse is a DescribeQuorum answer at version for the one
// partition, with its error code; the leader fills in the partition.
func describeQuorumResponse(version, code int16) (*kmsg.DescribeQuorumResponse, *kmsg.DescribeQuorumResponseTopicPartition) {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	resp.Version = version
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = MetadataTopic
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.ErrorCode = code
	t.Partitions = []kmsg.DescribeQuorumResponseTopicPartition{p}
	resp.Topics = []kmsg.DescribeQuorumResponseTopic{t}
	return resp, &resp.Topics[0].Partitions[0]
}

// describeQuorum is the leader's answer (the request passed the common
// checks): every replica it tracks, in id order, and from v2 the voters'
// listeners.
func (n *Node) describeQuorum(req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp, p := describeQuorumResponse(req.Version, errNone)
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = n.id, n.epoch, n.lead.progress.hw
	n.lead.progress.forgetObservers(n.now)
	ids := make([]int32, 0, len(n.lead.progress.replicas))
	for id := range n.lead.progress.replicas {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := n.lead.progress.replicas[id]
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.ReplicaDirectoryID, rs.LogEndOffset = r.id, r.dir, r.endOffset
		rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = r.lastFetchMs, r.lastCaughtUpMs
		if id == n.id {
			rs.ReplicaDirectoryID = n.cfg.DirectoryID
			rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = n.now, n.now
		}
		if r.voter && n.cfg.KRaftVersion == 0 {
			// Apache reports a voter by its key in the voter set, and a
			// static set (controller.quorum.voters) has no directory
			// ids: so the column is zero for every voter, the leader
			// included, whatever directory the voter fetches from.
			rs.ReplicaDirectoryID = [16]byte{}
		}
		if r.voter {
			p.CurrentVoters = append(p.CurrentVoters, rs)
		} else {
			p.Observers = append(p.Observers, rs)
		}
	}
	if req.Version >= 2 {
		for _, id := range n.voters {
			node := kmsg.NewDescribeQuorumResponseNode()
			node.NodeID = id
			for _, e := range n.endpointsOf(id) {
				node.Listeners = append(node.Listeners, kmsg.DescribeQuorumResponseNodeListener{Name: e.Name, Host: e.Host, Port: e.Port})
			}
			resp.Nodes = append(resp.Nodes, node)
		}
	}
	return resp
}

func (n *Node) endpointsOf(id int32) []Endpoint {
	if id == n.id && len(n.cfg.Endpoints) > 0 {
		return n.cfg.Endpoints
	}
	return n.cfg.Voters[id]
}
