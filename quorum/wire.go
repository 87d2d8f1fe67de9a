package quorum

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka error codes the quorum answers with or reacts to.
const (
	errNone                  int16 = 0
	errUnknownServerError    int16 = -1
	errUnknownTopicOrPart    int16 = 3
	errNotLeaderOrFollower   int16 = 6
	errRequestTimedOut       int16 = 7
	errBrokerNotAvailable    int16 = 8
	errUnsupportedVersion    int16 = 35
	errInvalidRequest        int16 = 42
	errFencedLeaderEpoch     int16 = 74
	errInvalidUpdateVersion  int16 = 95
	errUnknownLeaderEpoch    int16 = 75
	errSnapshotNotFound      int16 = 98
	errPositionOutOfRange    int16 = 99
	errInconsistentClusterID int16 = 104
	errInvalidVoterKey       int16 = 125
	errDuplicateVoter        int16 = 126
	errVoterNotFound         int16 = 127
)

// API keys and the newest versions the core speaks.
const (
	keyFetch          int16 = 1
	keyVote           int16 = 52
	keyBeginQuorum    int16 = 53
	keyEndQuorum      int16 = 54
	keyDescribeQuorum int16 = 55
	keyFetchSnapshot  int16 = 59
	keyApiVersions    int16 = 18
	keyAddVoter       int16 = 80
	keyRemoveVoter    int16 = 81
	keyUpdateVoter    int16 = 82
)

var newestVersion = map[int16]int16{
	keyFetch: 18, keyVote: 2, keyBeginQuorum: 1, keyEndQuorum: 1,
	keyFetchSnapshot: 1, keyDescribeQuorum: 2, keyAddVoter: 1,
}

// version is the version to send key at to peer: the newest we speak,
// capped by what the shell says the peer supports.
func (n *Node) version(peer int32, key int16) int16 {
	v := newestVersion[key]
	if n.cfg.PeerVersions != nil {
		if pv := n.cfg.PeerVersions(peer, key); pv >= 0 && pv < v {
			v = pv
		}
	}
	return v
}

// voterDir is the directory id the voter set knows voter id by, zero when
// none (a static set): Vote and BeginQuorumEpoch name it, as Apache's do,
// so that a node of that id formatted anew (another directory, its vote
// lost with its quorum-state) refuses with INVALID_VOTER_KEY.
func (n *Node) voterDir(id int32) [16]byte {
	v, _ := n.voterSet.Get(id)
	return v.DirectoryID
}

func (n *Node) clusterIDPtr() *string {
	s := n.cfg.ClusterID
	return &s
}

// clusterIDOK mirrors Apache's hasValidClusterId: absent is accepted.
func (n *Node) clusterIDOK(id *string) bool {
	return id == nil || *id == n.cfg.ClusterID
}

func (n *Node) buildVoteRequest(to int32, preVote bool) *kmsg.VoteRequest {
	req := kmsg.NewPtrVoteRequest()
	req.Version = n.version(to, keyVote)
	req.ClusterID = n.clusterIDPtr()
	req.VoterID = to
	p := kmsg.NewVoteRequestTopicPartition()
	p.CandidateEpoch = n.epoch
	p.CandidateID = n.id
	p.CandidateDirectoryID = n.cfg.DirectoryID
	p.VoterDirectoryID = n.voterDir(to)
	p.LastOffsetEpoch = n.lastEpoch
	p.LastOffset = n.endOffset
	p.PreVote = preVote
	t := kmsg.NewVoteRequestTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.VoteRequestTopicPartition{p}
	req.Topics = []kmsg.VoteRequestTopic{t}
	return req
}

func (n *Node) buildVoteResponse(version int16, code int16, granted bool) *kmsg.VoteResponse {
	resp := kmsg.NewPtrVoteResponse()
	resp.Version = version
	p := kmsg.NewVoteResponseTopicPartition()
	p.ErrorCode = code
	p.LeaderID = n.leaderID
	p.LeaderEpoch = n.epoch
	p.VoteGranted = granted
	t := kmsg.NewVoteResponseTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.VoteResponseTopicPartition{p}
	resp.Topics = []kmsg.VoteResponseTopic{t}
	if version >= 1 && n.leaderID >= 0 {
		for _, e := range n.endpointsOf(n.leaderID) {
			resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.VoteResponseNodeEndpoint{NodeID: n.leaderID, Host: e.Host, Port: e.Port})
		}
	}
	return resp
}

func (n *Node) buildBeginQuorumRequest(to int32) *kmsg.BeginQuorumEpochRequest {
	req := kmsg.NewPtrBeginQuorumEpochRequest()
	req.Version = n.version(to, keyBeginQuorum)
	req.ClusterID = n.clusterIDPtr()
	req.VoterID = to
	p := kmsg.NewBeginQuorumEpochRequestTopicPartition()
	p.VoterDirectoryID = n.voterDir(to)
	p.LeaderID = n.id
	p.LeaderEpoch = n.epoch
	t := kmsg.NewBeginQuorumEpochRequestTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.BeginQuorumEpochRequestTopicPartition{p}
	req.Topics = []kmsg.BeginQuorumEpochRequestTopic{t}
	for _, e := range n.cfg.Endpoints {
		req.LeaderEndpoints = append(req.LeaderEndpoints, kmsg.BeginQuorumEpochRequestLeaderEndpoint{Name: e.Name, Host: e.Host, Port: e.Port})
	}
	return req
}

func (n *Node) buildBeginQuorumResponse(version int16, code int16) *kmsg.BeginQuorumEpochResponse {
	resp := kmsg.NewPtrBeginQuorumEpochResponse()
	resp.Version = version
	p := kmsg.NewBeginQuorumEpochResponseTopicPartition()
	p.ErrorCode = code
	p.LeaderID = n.leaderID
	p.LeaderEpoch = n.epoch
	t := kmsg.NewBeginQuorumEpochResponseTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.BeginQuorumEpochResponseTopicPartition{p}
	resp.Topics = []kmsg.BeginQuorumEpochResponseTopic{t}
	return resp
}

func (n *Node) buildEndQuorumRequest(to int32, preferred []int32) *kmsg.EndQuorumEpochRequest {
	req := kmsg.NewPtrEndQuorumEpochRequest()
	req.Version = n.version(to, keyEndQuorum)
	req.ClusterID = n.clusterIDPtr()
	p := kmsg.NewEndQuorumEpochRequestTopicPartition()
	p.LeaderID = n.id
	p.LeaderEpoch = n.epoch
	for _, id := range preferred {
		if req.Version == 0 {
			p.PreferredSuccessors = append(p.PreferredSuccessors, id)
		} else {
			p.PreferredCandidates = append(p.PreferredCandidates, kmsg.EndQuorumEpochRequestTopicPartitionPreferredCandidate{CandidateID: id, CandidateDirectoryID: n.voterDir(id)})
		}
	}
	t := kmsg.NewEndQuorumEpochRequestTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.EndQuorumEpochRequestTopicPartition{p}
	req.Topics = []kmsg.EndQuorumEpochRequestTopic{t}
	if req.Version >= 1 {
		for _, e := range n.cfg.Endpoints {
			req.LeaderEndpoints = append(req.LeaderEndpoints, kmsg.EndQuorumEpochRequestLeaderEndpoint{Name: e.Name, Host: e.Host, Port: e.Port})
		}
	}
	return req
}

func (n *Node) buildEndQuorumResponse(version int16, code int16) *kmsg.EndQuorumEpochResponse {
	resp := kmsg.NewPtrEndQuorumEpochResponse()
	resp.Version = version
	p := kmsg.NewEndQuorumEpochResponseTopicPartition()
	p.ErrorCode = code
	p.LeaderID = n.leaderID
	p.LeaderEpoch = n.epoch
	t := kmsg.NewEndQuorumEpochResponseTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.EndQuorumEpochResponseTopicPartition{p}
	resp.Topics = []kmsg.EndQuorumEpochResponseTopic{t}
	return resp
}

func (n *Node) buildFetchRequest(to int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = n.version(to, keyFetch)
	req.ClusterID = n.clusterIDPtr()
	req.ReplicaID = n.id
	req.ReplicaState.ID = n.id
	req.MaxWaitMillis = n.cfg.FetchMaxWaitMs
	req.MinBytes = 0
	req.MaxBytes = int32(n.cfg.MaxFetchBytes)
	req.SessionEpoch = -1
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = 0
	p.CurrentLeaderEpoch = n.epoch
	p.FetchOffset = n.endOffset
	p.LastFetchedEpoch = n.lastEpoch
	p.LogStartOffset = n.log.StartOffset()
	p.PartitionMaxBytes = int32(n.cfg.MaxFetchBytes)
	p.ReplicaDirectoryID = n.cfg.DirectoryID
	p.HighWatermark = n.hw
	t := kmsg.NewFetchRequestTopic()
	t.Topic = MetadataTopic
	t.TopicID = MetadataTopicID
	t.Partitions = []kmsg.FetchRequestTopicPartition{p}
	req.Topics = []kmsg.FetchRequestTopic{t}
	return req
}

// fetchResponse builds a single-partition Fetch response at version; records
// and the divergence/snapshot fields are filled by the caller.
func (n *Node) fetchResponse(version int16, code int16, hw int64) (*kmsg.FetchResponse, *kmsg.FetchResponseTopicPartition) {
	return n.refillFetchResponse(nil, version, code, hw)
}

// refillFetchResponse is fetchResponse written into resp, one of the
// node's own answers never sent (a parked fetch's original), reusing its
// slices; a nil resp is a new one.
func (n *Node) refillFetchResponse(resp *kmsg.FetchResponse, version int16, code int16, hw int64) (*kmsg.FetchResponse, *kmsg.FetchResponseTopicPartition) {
	if resp == nil {
		resp = &kmsg.FetchResponse{Topics: make([]kmsg.FetchResponseTopic, 1)}
		resp.Topics[0].Partitions = make([]kmsg.FetchResponseTopicPartition, 1)
	}
	topics, partitions, brokers := resp.Topics[:1], resp.Topics[0].Partitions[:1], resp.Brokers[:0]
	*resp = kmsg.NewFetchResponse()
	resp.Version = version
	t := &topics[0]
	*t = kmsg.NewFetchResponseTopic()
	t.Topic = MetadataTopic
	t.TopicID = MetadataTopicID
	p := &partitions[0]
	*p = kmsg.NewFetchResponseTopicPartition()
	p.ErrorCode = code
	p.HighWatermark = hw
	p.LastStableOffset = hw
	p.LogStartOffset = n.log.StartOffset()
	p.CurrentLeader.LeaderID = n.leaderID
	p.CurrentLeader.LeaderEpoch = n.epoch
	t.Partitions = partitions
	resp.Topics = topics
	if version >= 17 && n.leaderID >= 0 {
		for _, e := range n.endpointsOf(n.leaderID) {
			brokers = append(brokers, kmsg.FetchResponseBroker{NodeID: n.leaderID, Host: e.Host, Port: int32(e.Port)})
		}
		resp.Brokers = brokers
	}
	return resp, p
}

// fetchTopicOK checks the request names exactly __cluster_metadata-0, by
// topic id from v13 and by name before.
func fetchTopicOK(req *kmsg.FetchRequest) bool {
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		return false
	}
	if req.Version >= 13 {
		return req.Topics[0].TopicID == MetadataTopicID
	}
	return req.Topics[0].Topic == MetadataTopic
}

func fetchResponseTopicOK(resp *kmsg.FetchResponse) bool {
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != 0 {
		return false
	}
	if resp.Version >= 13 {
		return resp.Topics[0].TopicID == MetadataTopicID
	}
	return resp.Topics[0].Topic == MetadataTopic
}

func (n *Node) buildFetchSnapshotRequest(to int32, id SnapshotID, pos int64) *kmsg.FetchSnapshotRequest {
	req := kmsg.NewPtrFetchSnapshotRequest()
	req.Version = n.version(to, keyFetchSnapshot)
	req.ClusterID = n.clusterIDPtr()
	req.ReplicaID = n.id
	req.MaxBytes = int32(n.cfg.MaxFetchBytes)
	p := kmsg.NewFetchSnapshotRequestTopicPartition()
	p.CurrentLeaderEpoch = n.epoch
	p.SnapshotID.EndOffset = id.EndOffset
	p.SnapshotID.Epoch = id.Epoch
	p.Position = pos
	p.ReplicaDirectoryID = n.cfg.DirectoryID
	t := kmsg.NewFetchSnapshotRequestTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.FetchSnapshotRequestTopicPartition{p}
	req.Topics = []kmsg.FetchSnapshotRequestTopic{t}
	return req
}

func (n *Node) fetchSnapshotResponse(version int16, topLevel, code int16) (*kmsg.FetchSnapshotResponse, *kmsg.FetchSnapshotResponseTopicPartition) {
	resp := kmsg.NewPtrFetchSnapshotResponse()
	resp.Version = version
	resp.ErrorCode = topLevel
	t := kmsg.NewFetchSnapshotResponseTopic()
	t.Topic = MetadataTopic
	p := kmsg.NewFetchSnapshotResponseTopicPartition()
	p.ErrorCode = code
	p.CurrentLeader.LeaderID = n.leaderID
	p.CurrentLeader.LeaderEpoch = n.epoch
	t.Partitions = []kmsg.FetchSnapshotResponseTopicPartition{p}
	resp.Topics = []kmsg.FetchSnapshotResponseTopic{t}
	if version >= 1 && n.leaderID >= 0 {
		for _, e := range n.endpointsOf(n.leaderID) {
			resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.FetchSnapshotResponseNodeEndpoint{NodeID: n.leaderID, Host: e.Host, Port: e.Port})
		}
	}
	return resp, &resp.Topics[0].Partitions[0]
}

// singlePartition reports whether a KRaft request addresses exactly
// __cluster_metadata partition 0 by name.
func singlePartition(topics int, name string, partitions int, partition int32) bool {
	return topics == 1 && name == MetadataTopic && partitions == 1 && partition == 0
}

func addVoterResponse(version, code int16, msg string) *kmsg.AddRaftVoterResponse {
	resp := kmsg.NewPtrAddRaftVoterResponse()
	resp.Version, resp.ErrorCode = version, code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

func removeVoterResponse(version, code int16, msg string) *kmsg.RemoveRaftVoterResponse {
	resp := kmsg.NewPtrRemoveRaftVoterResponse()
	resp.Version, resp.ErrorCode = version, code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// updateVoterResponse names the leader as this node knows it, with its
// endpoint on the default listener, as Apache's RaftUtil.updateVoterResponse.
func (n *Node) updateVoterResponse(version, code int16) *kmsg.UpdateRaftVoterResponse {
	resp := kmsg.NewPtrUpdateRaftVoterResponse()
	resp.Version, resp.ErrorCode = version, code
	resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = n.leaderID, n.epoch
	if n.leaderID >= 0 {
		if e, ok := endpointOn(n.endpointsOf(n.leaderID), n.defaultListener()); ok {
			resp.CurrentLeader.Host, resp.CurrentLeader.Port = e.Host, int32(e.Port)
		}
	}
	return resp
}
