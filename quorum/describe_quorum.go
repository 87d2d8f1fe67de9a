// describe_quorum.go owns the leader's DescribeQuorum answer: voters and
// observers with their fetch positions, and the voters' listeners.

package quorum

import (
	"bytes"
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
// checks): the voters, then the observers, each in id order, and from v2
// the voters' listeners. A voter is shown by its key in the voter set, as
// Apache shows it: a set without directory ids (a static one) shows zero.
func (n *Node) describeQuorum(req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp, p := describeQuorumResponse(req.Version, errNone)
	pr := &n.lead.progress
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = n.id, n.epoch, pr.hw
	pr.forgetObservers(n.now)
	for _, v := range pr.set {
		r := pr.replicas[v.ID]
		rs := describeReplica(r)
		rs.ReplicaDirectoryID = v.DirectoryID
		if r == pr.selfState {
			rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = n.now, n.now
		}
		p.CurrentVoters = append(p.CurrentVoters, rs)
	}
	observers := make([]*replicaState, 0, len(pr.observers)+1)
	for _, r := range pr.observers {
		observers = append(observers, r)
	}
	if !pr.selfVoter {
		observers = append(observers, pr.selfState)
	}
	slices.SortFunc(observers, func(a, b *replicaState) int {
		if a.id != b.id {
			return int(a.id) - int(b.id)
		}
		return bytes.Compare(a.dir[:], b.dir[:])
	})
	for _, r := range observers {
		rs := describeReplica(r)
		if r == pr.selfState {
			rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = n.now, n.now
		}
		p.Observers = append(p.Observers, rs)
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

func describeReplica(r *replicaState) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	rs.ReplicaID, rs.ReplicaDirectoryID, rs.LogEndOffset = r.id, r.dir, r.endOffset
	rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = r.lastFetchMs, r.lastCaughtUpMs
	return rs
}

// endpointsOf are a voter's listeners: this node's own from its
// configuration, another's from the voter set.
func (n *Node) endpointsOf(id int32) []Endpoint {
	if id == n.id && len(n.cfg.Endpoints) > 0 {
		return n.cfg.Endpoints
	}
	v, _ := n.voterSet.Get(id)
	return v.Endpoints
}
