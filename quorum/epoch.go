// epoch.go owns the common rules every message goes through before its
// role sees it: cluster id and partition checks, epoch comparison, leader
// discovery (Apache's maybeTransition and maybeHandleCommonResponse), and
// matching an answer to the role and epoch its request was sent in.

package quorum

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxEpoch is the largest epoch a node takes from a peer, in any request or
// answer. A node must be able to stand for election from every epoch it
// holds, and a candidacy needs epoch+1: a node that took math.MaxInt32 would
// stand at math.MinInt32 (Apache's QuorumState does exactly that), and a
// quorum that persisted it would never elect a leader again. So a request
// naming a larger epoch is answered INVALID_REQUEST (the epoch is not one a
// correct peer can send) and changes nothing, and an answer naming one is
// dropped as malformed. The node's own candidacy may still take the last
// epoch, math.MaxInt32 (canStand); past it there is nothing left to stand
// for. Honest elections never come near: at one a second they take 68 years.
const maxEpoch = LastEpoch - 1

// LastEpoch is the last epoch of int32. A node that holds it can never
// stand for election again, nor follow the leader of an earlier epoch:
// only its own candidacy from maxEpoch gets there. The runtime refuses to
// start from a quorum-state that holds it (node.OpenDisk).
const LastEpoch = math.MaxInt32

// maxEpochStep is how far past its own epoch one request (Vote,
// BeginQuorumEpoch, EndQuorumEpoch) may move a node. A request comes from
// anyone who can reach the listener and names any id, so it must cost the
// quorum no more epochs than an honest election does: were it free to name
// any epoch, one request could move a voter near math.MaxInt32, and the
// quorum would run out of epochs to elect a leader in (issue 34). Two
// lets a prospective one epoch ahead of this node (its pre-vote names its
// own epoch, its candidacy the next) win this node's vote, as before. A
// node further behind is not moved by a request: it learns the epoch from
// the answers to its own requests (its fetch, its pre-vote), which come
// from peers it dialled at addresses it was configured with, and then
// takes the next election's requests. Answers are not bounded: they are
// how a node that was away catches up.
const maxEpochStep = 2

// withinStep reports whether a request may move this node to epoch.
func (n *Node) withinStep(epoch int32) bool {
	return int64(epoch) <= int64(n.epoch)+maxEpochStep && epoch <= maxEpoch
}

// hasLiveLeader reports whether the node leads, or follows a leader it has
// fetched from within the fetch timeout and not found gone.
func (n *Node) hasLiveLeader() bool {
	return n.role == RoleLeader || (n.role == RoleFollower && n.hasFetchedFromLeader)
}

// stepRequest answers a peer's request. Each handler applies the common
// checks and epoch rules, then passes what is left to the role: the vote
// decision to rules().grantVote, the rest to rules().step.
func (n *Node) stepRequest(m Message) {
	switch req := m.Request.(type) {
	case *kmsg.VoteRequest:
		n.respond(m, n.handleVote(req))
	case *kmsg.BeginQuorumEpochRequest:
		n.respond(m, n.handleBeginQuorum(req))
	case *kmsg.EndQuorumEpochRequest:
		n.respond(m, n.handleEndQuorum(m, req))
	case *kmsg.FetchRequest:
		if resp := n.checkFetch(req); resp != nil {
			n.respond(m, resp)
			return
		}
		n.rules().step(n, m, outRequest{})
	case *kmsg.FetchSnapshotRequest:
		if resp := n.checkFetchSnapshot(req); resp != nil {
			n.respond(m, resp)
			return
		}
		n.rules().step(n, m, outRequest{})
	case *kmsg.AddRaftVoterRequest:
		if code, msg := n.checkAddVoter(req); code != errNone {
			n.respond(m, addVoterResponse(req.Version, code, msg))
			return
		}
		n.rules().step(n, m, outRequest{})
	case *kmsg.RemoveRaftVoterRequest:
		if code, msg := n.checkRemoveVoter(req); code != errNone {
			n.respond(m, removeVoterResponse(req.Version, code, msg))
			return
		}
		n.rules().step(n, m, outRequest{})
	case *kmsg.UpdateRaftVoterRequest:
		if code := n.checkUpdateVoter(req); code != errNone {
			n.respond(m, n.updateVoterResponse(req.Version, code))
			return
		}
		n.rules().step(n, m, outRequest{})
	case *kmsg.DescribeQuorumRequest:
		switch {
		case len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 ||
			!singlePartition(1, req.Topics[0].Topic, 1, req.Topics[0].Partitions[0].Partition):
			resp, _ := describeQuorumResponse(req.Version, errUnknownTopicOrPart)
			n.respond(m, resp)
		case n.role != RoleLeader:
			resp, _ := describeQuorumResponse(req.Version, errNotLeaderOrFollower)
			n.respond(m, resp)
		default:
			n.rules().step(n, m, outRequest{})
		}
	}
}

func (n *Node) respond(in Message, resp kmsg.Response) {
	n.msgs = append(n.msgs, Message{From: n.id, To: in.From, ReqID: in.ReqID, Response: resp})
}

// handleVote follows KafkaRaftClient.handleVoteRequest and the states'
// canGrantVote.
func (n *Node) handleVote(req *kmsg.VoteRequest) *kmsg.VoteResponse {
	if !n.clusterIDOK(req.ClusterID) {
		r := n.buildVoteResponse(req.Version, errNone, false)
		r.ErrorCode, r.Topics = errInconsistentClusterID, nil
		return r
	}
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 ||
		!singlePartition(1, req.Topics[0].Topic, 1, req.Topics[0].Partitions[0].Partition) {
		r := n.buildVoteResponse(req.Version, errNone, false)
		r.ErrorCode, r.Topics = errInvalidRequest, nil
		return r
	}
	p := req.Topics[0].Partitions[0]
	preVote := req.Version >= 2 && p.PreVote
	// A standard candidate bumped its epoch past anything in its log; a
	// prospective one did not.
	illegalEpoch := p.LastOffsetEpoch >= p.CandidateEpoch
	if preVote {
		illegalEpoch = p.LastOffsetEpoch > p.CandidateEpoch
	}
	if p.LastOffset < 0 || p.LastOffsetEpoch < 0 || illegalEpoch || p.CandidateEpoch > maxEpoch {
		return n.buildVoteResponse(req.Version, errInvalidRequest, false)
	}
	if p.CandidateEpoch < n.epoch {
		return n.buildVoteResponse(req.Version, errFencedLeaderEpoch, false)
	}
	if p.CandidateID < 0 {
		return n.buildVoteResponse(req.Version, errInvalidRequest, false)
	}
	if n.refuseLaterVote(p.CandidateID, p.CandidateEpoch, preVote) {
		// Answered from the candidate's epoch, as a refusal it counts: an
		// answer from this node's older epoch would be dropped as stale,
		// and the candidate would ask again at once, without end.
		return n.aheadOfVote(n.buildVoteResponse(req.Version, errNone, false), true, p.CandidateEpoch)
	}
	// A standard vote for a later epoch moves this node there first, even
	// from a candidate outside the voter set: under KIP-853 this node's
	// voter set may be older than the candidate's. A pre-vote never moves
	// it (KIP-996: a pre-vote changes nothing on the receiver; Apache moves
	// anyway, so one forged pre-vote unseated its leader).
	ahead := preVote && p.CandidateEpoch > n.epoch
	if !preVote && p.CandidateEpoch > n.epoch {
		n.becomeUnattached(p.CandidateEpoch, -1)
	}
	if req.Version >= 1 && req.VoterID >= 0 &&
		(req.VoterID != n.id || (p.VoterDirectoryID != [16]byte{} && p.VoterDirectoryID != n.cfg.DirectoryID)) {
		return n.aheadOfVote(n.buildVoteResponse(req.Version, errInvalidVoterKey, false), ahead, p.CandidateEpoch)
	}
	ask := voteAsk{
		candidate: p.CandidateID,
		upToDate:  compareOffsetEpoch(p.LastOffset, p.LastOffsetEpoch, n.endOffset, n.lastEpoch) >= 0,
		preVote:   preVote,
	}
	if req.Version >= 1 {
		ask.dir = p.CandidateDirectoryID
	}
	if ahead {
		// Judge it as the node Apache would have moved to: Unattached in
		// the candidate's epoch, with no leader and no vote, which grants
		// any up-to-date pre-vote.
		return n.aheadOfVote(n.buildVoteResponse(req.Version, errNone, ask.upToDate), true, p.CandidateEpoch)
	}
	return n.buildVoteResponse(req.Version, errNone, n.rules().grantVote(n, ask))
}

// refuseLaterVote reports whether a Vote for a later epoch than this
// node's is refused without moving the node. The candidacy must be within
// maxEpochStep (a pre-vote names the prospective's epoch; its candidacy
// will take the next). A standard Vote from a candidate outside this
// node's voter set is also refused while the node has a live leader: it
// may be a voter of a newer set (KIP-853), but a majority lost its leader
// before a real candidate stands (pre-vote), and this node, still hearing
// from its leader, would not have granted that pre-vote either. It is the
// Raft thesis's rule (4.2.3) for the one sender KIP-853 makes us trust
// blindly; without it one forged Vote unseats a healthy leader.
func (n *Node) refuseLaterVote(candidate, epoch int32, preVote bool) bool {
	if epoch <= n.epoch {
		return false
	}
	if preVote {
		return !n.withinStep(epoch + 1)
	}
	if !n.withinStep(epoch) {
		return true
	}
	_, known := n.voterSet.Get(candidate)
	return !known && n.hasLiveLeader()
}

// aheadOfVote makes the answer to a pre-vote for a later epoch than the
// node's read as if from that epoch, with no leader known: what Apache's
// answer says after its move, so the prospective counts it. An answer at
// the node's own, older epoch would be dropped by the prospective as stale.
func (n *Node) aheadOfVote(resp *kmsg.VoteResponse, ahead bool, epoch int32) *kmsg.VoteResponse {
	if ahead {
		p := &resp.Topics[0].Partitions[0]
		p.LeaderID, p.LeaderEpoch = -1, epoch
		resp.NodeEndpoints = nil
	}
	return resp
}

// voteAsk is a Vote request that passed the common checks, as the role's
// grantVote sees it.
type voteAsk struct {
	candidate int32
	dir       [16]byte // the candidate's directory id (zero before v1)
	upToDate  bool     // the candidate's log is at least as long as ours
	preVote   bool
}

// compareOffsetEpoch orders log ends by epoch, then offset.
func compareOffsetEpoch(offA int64, epochA int32, offB int64, epochB int32) int {
	switch {
	case epochA != epochB:
		if epochA < epochB {
			return -1
		}
		return 1
	case offA < offB:
		return -1
	case offA > offB:
		return 1
	}
	return 0
}

func (n *Node) handleBeginQuorum(req *kmsg.BeginQuorumEpochRequest) *kmsg.BeginQuorumEpochResponse {
	notice := leaderNotice{clusterID: req.ClusterID}
	var p kmsg.BeginQuorumEpochRequestTopicPartition
	if len(req.Topics) == 1 && len(req.Topics[0].Partitions) == 1 {
		p = req.Topics[0].Partitions[0]
		notice.shapeOK = singlePartition(1, req.Topics[0].Topic, 1, p.Partition)
		notice.leader, notice.epoch = p.LeaderID, p.LeaderEpoch
	}
	if topLevel, code := n.checkLeaderNotice(notice); topLevel != errNone || code != errNone {
		r := n.buildBeginQuorumResponse(req.Version, code)
		if topLevel != errNone {
			r.ErrorCode, r.Topics = topLevel, nil
		}
		return r
	}
	if req.Version >= 1 && req.VoterID >= 0 &&
		(req.VoterID != n.id || (p.VoterDirectoryID != [16]byte{} && p.VoterDirectoryID != n.cfg.DirectoryID)) {
		return n.buildBeginQuorumResponse(req.Version, errInvalidVoterKey)
	}
	return n.buildBeginQuorumResponse(req.Version, errNone)
}

// leaderNotice is what BeginQuorumEpoch and EndQuorumEpoch share: a leader
// telling the voters of its epoch, begun or ended.
type leaderNotice struct {
	clusterID     *string
	shapeOK       bool // one topic, the metadata partition
	leader, epoch int32
}

// checkLeaderNotice applies the rules both notices share and, when they
// pass, moves the node to the notice's epoch and leader. It returns a
// top-level error (answered with no topics) or a partition error.
func (n *Node) checkLeaderNotice(notice leaderNotice) (topLevel, code int16) {
	switch {
	case !n.clusterIDOK(notice.clusterID):
		return errInconsistentClusterID, errNone
	case !notice.shapeOK:
		return errInvalidRequest, errNone
	}
	if code := n.validateVoterOnly(notice.leader, notice.epoch); code != errNone {
		return errNone, code
	}
	if notice.epoch == n.epoch && n.leaderID >= 0 && notice.leader != n.leaderID {
		// A second leader of this node's epoch. From a peer's answer that
		// is a broken quorum (maybeTransition stops the node), but anyone
		// can send a request naming any leader: refuse it, change nothing.
		return errNone, errInvalidRequest
	}
	n.maybeTransition(notice.leader, notice.epoch)
	return errNone, errNone
}

func (n *Node) validateVoterOnly(remote, epoch int32) int16 {
	switch {
	case epoch < n.epoch:
		return errFencedLeaderEpoch
	case remote < 0 || epoch > maxEpoch:
		return errInvalidRequest
	case !n.withinStep(epoch):
		// Newer than this node can be moved to by a request
		// (maxEpochStep); its answer carries the node's own epoch, which
		// the sender drops as stale.
		return errUnknownLeaderEpoch
	}
	return errNone
}

func (n *Node) validateLeaderOnly(epoch int32) int16 {
	switch {
	case epoch < n.epoch:
		return errFencedLeaderEpoch
	case epoch > maxEpoch:
		// No leader can hold it; UNKNOWN_LEADER_EPOCH would tell the
		// fetcher to wait for one.
		return errInvalidRequest
	case epoch > n.epoch:
		return errUnknownLeaderEpoch
	case n.role != RoleLeader:
		return errNotLeaderOrFollower
	}
	return errNone
}

// handleEndQuorum takes a resigning leader's notice; a follower of it acts
// on it in its step.
func (n *Node) handleEndQuorum(m Message, req *kmsg.EndQuorumEpochRequest) *kmsg.EndQuorumEpochResponse {
	notice := leaderNotice{clusterID: req.ClusterID}
	if len(req.Topics) == 1 && len(req.Topics[0].Partitions) == 1 {
		p := req.Topics[0].Partitions[0]
		notice.shapeOK = singlePartition(1, req.Topics[0].Topic, 1, p.Partition)
		notice.leader, notice.epoch = p.LeaderID, p.LeaderEpoch
	}
	if topLevel, code := n.checkLeaderNotice(notice); topLevel != errNone || code != errNone {
		r := n.buildEndQuorumResponse(req.Version, code)
		if topLevel != errNone {
			r.ErrorCode, r.Topics = topLevel, nil
		}
		return r
	}
	n.rules().step(n, m, outRequest{})
	return n.buildEndQuorumResponse(req.Version, errNone)
}

// checkFetch applies the common checks to a Fetch: cluster id, partition,
// the fields, and the leader-only rule. It returns the error answer, or nil
// when the leader's step should serve the fetch.
func (n *Node) checkFetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	if !n.clusterIDOK(req.ClusterID) {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version, resp.ErrorCode = req.Version, errInconsistentClusterID
		return resp
	}
	if !fetchTopicOK(req) {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version, resp.ErrorCode = req.Version, errInvalidRequest
		return resp
	}
	p := req.Topics[0].Partitions[0]
	if req.MaxWaitMillis < 0 || p.FetchOffset < 0 || p.LastFetchedEpoch < 0 || p.LastFetchedEpoch > p.CurrentLeaderEpoch {
		resp, _ := n.fetchResponse(req.Version, errInvalidRequest, -1)
		return resp
	}
	if code := n.validateLeaderOnly(p.CurrentLeaderEpoch); code != errNone {
		resp, _ := n.fetchResponse(req.Version, code, -1)
		return resp
	}
	return nil
}

// checkFetchSnapshot is checkFetch for FetchSnapshot.
func (n *Node) checkFetchSnapshot(req *kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse {
	if !n.clusterIDOK(req.ClusterID) {
		resp, _ := n.fetchSnapshotResponse(req.Version, errInconsistentClusterID, errNone)
		resp.Topics = nil
		return resp
	}
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 ||
		!singlePartition(1, req.Topics[0].Topic, 1, req.Topics[0].Partitions[0].Partition) {
		resp, _ := n.fetchSnapshotResponse(req.Version, errInvalidRequest, errNone)
		resp.Topics = nil
		return resp
	}
	if code := n.validateLeaderOnly(req.Topics[0].Partitions[0].CurrentLeaderEpoch); code != errNone {
		resp, _ := n.fetchSnapshotResponse(req.Version, errNone, code)
		return resp
	}
	return nil
}

// stepResponse takes the answer to one of the node's requests: the common
// rules first, then the role's step if the answer still concerns it.
func (n *Node) stepResponse(m Message, out outRequest) {
	if out.to == n.leaderID {
		n.leaderGoneCount = 0 // any answer shows the leader's process is alive
	}
	if n.commonResponse(m, out) {
		n.rules().step(n, m, out)
	}
}

// commonResponse applies what every answer goes through: an error answer
// backs the peer off, and the leader and epoch it carries may move the node
// (handleCommonResponse). It reports whether the role should see the answer:
// only when it answers a request sent in the role and epoch the node is in.
func (n *Node) commonResponse(m Message, out outRequest) bool {
	switch resp := m.Response.(type) {
	case *kmsg.VoteResponse:
		if resp.ErrorCode == errUnsupportedVersion && out.preVote && n.sentInThisState(out) {
			// The peer cannot take a pre-vote: as Apache does, stand in a
			// standard election instead.
			n.becomeCandidate()
			return false
		}
		if resp.ErrorCode != errNone || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			n.backoff(m.From)
			return false
		}
		p := resp.Topics[0].Partitions[0]
		// VoteResponse does not say whether it answers a pre-vote: match it
		// to the role and epoch we asked in.
		current := n.sentInThisState(out)
		if n.handleCommonResponse(m.From, p.ErrorCode, p.LeaderID, p.LeaderEpoch) {
			// A refusal such as INVALID_VOTER_KEY (the voter was
			// formatted anew) is not asked again at once.
			n.backoffUnlessMoved(m.From, p.ErrorCode, out)
			return false
		}
		return current
	case *kmsg.BeginQuorumEpochResponse:
		if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			p := resp.Topics[0].Partitions[0]
			n.handleCommonResponse(m.From, p.ErrorCode, p.LeaderID, p.LeaderEpoch)
		}
		return false
	case *kmsg.EndQuorumEpochResponse:
		if resp.ErrorCode != errNone || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			n.backoff(m.From)
			return false
		}
		p := resp.Topics[0].Partitions[0]
		return !n.handleCommonResponse(m.From, p.ErrorCode, p.LeaderID, p.LeaderEpoch) && n.sentInThisState(out)
	case *kmsg.FetchResponse:
		if resp.ErrorCode != errNone || !fetchResponseTopicOK(resp) {
			n.backoff(m.From)
			return false
		}
		p := &resp.Topics[0].Partitions[0]
		current := n.sentInThisState(out)
		for _, b := range resp.Brokers {
			if n.learnLeaderEndpoint(p.CurrentLeader.LeaderID, b.NodeID, b.Host, b.Port) {
				break // the first is on the listener asked
			}
		}
		if n.handleCommonResponse(m.From, p.ErrorCode, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch) {
			n.backoffUnlessMoved(m.From, p.ErrorCode, out)
			return false
		}
		return current
	case *kmsg.UpdateRaftVoterResponse:
		l := resp.CurrentLeader
		if n.handleCommonResponse(m.From, resp.ErrorCode, l.LeaderID, l.LeaderEpoch) {
			return false
		}
		return (resp.ErrorCode == errNone || resp.ErrorCode == errUnsupportedVersion) && n.sentInThisState(out)
	case *kmsg.AddRaftVoterResponse, *kmsg.RemoveRaftVoterResponse:
		// Only an observer joining by itself asks (autojoin.go).
		return n.sentInThisState(out)
	case *kmsg.ApiVersionsResponse:
		// Only a leader adding a voter asks; the answer matters only to
		// the leadership that asked.
		return n.sentInThisState(out)
	case *kmsg.FetchSnapshotResponse:
		if resp.ErrorCode != errNone || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			n.backoff(m.From)
			return false
		}
		p := &resp.Topics[0].Partitions[0]
		current := n.sentInThisState(out)
		for _, e := range resp.NodeEndpoints {
			if n.learnLeaderEndpoint(p.CurrentLeader.LeaderID, e.NodeID, e.Host, int32(e.Port)) {
				break
			}
		}
		if n.handleCommonResponse(m.From, p.ErrorCode, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch) {
			if p.ErrorCode == errSnapshotNotFound || p.ErrorCode == errPositionOutOfRange {
				n.snap = nil // start over with a Fetch, which names the current snapshot
			}
			n.backoffUnlessMoved(m.From, p.ErrorCode, out)
			return false
		}
		return current
	}
	return false
}

// handleCommonResponse applies the leader and epoch carried by a response
// (Apache's maybeHandleCommonResponse). It returns true when the response
// needs no further handling; false only for an answer without error. An
// answer naming an epoch past maxEpoch is dropped and its sender backed
// off, as for a malformed answer.
func (n *Node) handleCommonResponse(from int32, code int16, leader, epoch int32) bool {
	if epoch > maxEpoch {
		n.backoff(from)
		return true
	}
	if epoch == n.epoch && leader >= 0 && n.leaderID >= 0 && leader != n.leaderID {
		n.fatal = fmt.Errorf("%w: epoch %d has leaders %d and %d (node %d)", ErrInconsistentLeader, epoch, n.leaderID, leader, n.id)
		return true
	}
	switch {
	case epoch < n.epoch || code == errUnknownLeaderEpoch:
		return true
	case epoch > n.epoch || code == errFencedLeaderEpoch || code == errNotLeaderOrFollower:
		n.maybeTransition(leader, epoch)
		return true
	case epoch == n.epoch && leader >= 0 && n.leaderID < 0 && leader != n.id:
		n.becomeFollower(epoch, leader)
		return code != errNone
	case code != errNone:
		return true
	}
	return false
}

// maybeTransition applies the leader and epoch a peer reported, as
// Apache's KafkaRaftClient.maybeTransition does.
func (n *Node) maybeTransition(leader, epoch int32) {
	if epoch == n.epoch && leader >= 0 && n.leaderID >= 0 && leader != n.leaderID {
		n.fatal = fmt.Errorf("%w: epoch %d has leaders %d and %d (node %d)", ErrInconsistentLeader, epoch, n.leaderID, leader, n.id)
		return
	}
	switch {
	case epoch > n.epoch:
		if leader >= 0 && leader != n.id {
			n.becomeFollower(epoch, leader)
		} else {
			n.becomeUnattached(epoch, -1)
		}
	case epoch == n.epoch && leader >= 0 && n.leaderID < 0 && leader != n.id:
		n.becomeFollower(epoch, leader)
	}
}

// sentInThisState reports whether out was sent in the role and epoch the
// node is in now. Only such an answer describes the log as it stands: a
// Fetch sent before the node last changed state asked from a position it
// may since have truncated or moved past (Apache forgets every request in
// flight on a state change). It must be asked before the answer's own
// leader and epoch are applied, because the answer that tells an
// Unattached node or an observer who leads may carry records for it.
func (n *Node) sentInThisState(out outRequest) bool {
	return out.role == n.role && out.epoch == n.epoch
}

// backoffUnlessMoved delays the next request to peer after an error answer,
// unless the answer moved this node to a new role or epoch: then the new
// role's first request should leave at once.
func (n *Node) backoffUnlessMoved(peer int32, code int16, out outRequest) {
	if code != errNone && out.role == n.role && out.epoch == n.epoch {
		n.backoff(peer)
	}
}

// messageBody is the request or response m carries, for the role steps'
// type switches.
func messageBody(m Message) any {
	if m.Request != nil {
		return m.Request
	}
	return m.Response
}
