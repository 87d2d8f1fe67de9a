package quorum

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Node is one KRaft replica (voter or observer) as a pure state machine.
// It is not safe for concurrent use; see the package doc for the Ready loop.
type Node struct {
	cfg  Config
	id   int32
	log  Log
	rand *rand.Rand
	now  int64

	voters  []int32 // sorted voter ids
	isVoter bool

	role     Role
	epoch    int32
	leaderID int32 // -1 when unknown
	votedID  int32 // -1 when none
	votedDir [16]byte
	// hw is the local high watermark: monotonic, -1 until known. It is what
	// the shell may apply up to. A leader's protocol HW lives in lead.hw.
	hw int64

	// electionDeadline drives Unattached, Prospective, Candidate and Resigned.
	electionDeadline int64
	// fetchDeadline drives Follower (and observers' bootstrap fallback).
	fetchDeadline        int64
	hasFetchedFromLeader bool

	// Nominee (Prospective/Candidate) election state.
	granted  map[int32]bool
	rejected map[int32]bool

	lead *leaderState

	// Resigned: voters that have not acknowledged EndQuorumEpoch yet, and the
	// successors ordered by fetch offset.
	unacked   map[int32]bool
	preferred []int32

	// snap is the follower's snapshot download, nil when none.
	snap *snapshotDownload

	reqs requestTracker

	// Output accumulated since the last Ready.
	persisted    HardState // what the shell has written (or was given)
	readyHS      HardState
	msgs         []Message
	proposals    [][]byte
	proposalBase int64
	appendBuf    []byte
	truncate     *int64
	snapChunk    *SnapshotChunk
	// endOffset and lastEpoch are the log end as it will be once the
	// pending output is applied (valid unless truncate or snapChunk pend).
	endOffset int64
	lastEpoch int32
	prevSoft  SoftState
	prevHW    int64
	fatal     error
}

type leaderState struct {
	progress      progressTracker
	granting      []int32
	beginQuorumAt int64
	lastAppendMs  int64
	parked        []parkedFetch
}

// New builds a node from its config, quorum-state and log. The initial role
// follows Apache's QuorumState.initialize: leader of the stored epoch →
// Resigned; voted for itself → Candidate; known leader → Follower; else
// Unattached (keeping any vote).
func New(cfg Config) (*Node, error) {
	if cfg.Log == nil || cfg.Rand == nil {
		return nil, errors.New("quorum: Config.Log and Config.Rand are required")
	}
	if len(cfg.Voters) == 0 {
		return nil, errors.New("quorum: Config.Voters is empty")
	}
	defaults := []struct {
		v *int64
		d int64
	}{
		{&cfg.ElectionTimeoutMs, 1000}, {&cfg.FetchTimeoutMs, 2000}, {&cfg.ElectionBackoffMaxMs, 1000},
		{&cfg.RequestTimeoutMs, 2000}, {&cfg.RetryBackoffMs, 20}, {&cfg.IdleIntervalMs, 500},
	}
	for _, d := range defaults {
		if *d.v <= 0 {
			*d.v = d.d
		}
	}
	if cfg.FetchMaxWaitMs <= 0 {
		cfg.FetchMaxWaitMs = 500
	}
	if cfg.MaxFetchBytes <= 0 {
		cfg.MaxFetchBytes = 8 << 20
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 8 << 20
	}
	n := &Node{
		cfg: cfg, id: cfg.NodeID, log: cfg.Log, rand: cfg.Rand,
		leaderID: -1, votedID: -1, hw: -1, prevHW: -1,
		reqs:      newRequestTracker(),
		persisted: cfg.HardState,
	}
	for id := range cfg.Voters {
		n.voters = append(n.voters, id)
		if id == n.id {
			n.isVoter = true
		}
	}
	slices.Sort(n.voters)
	n.reloadLogEnd()
	if snap, ok := n.latestSnapshot(); ok {
		n.hw = snap.EndOffset // a snapshot only ever covers committed records
	}

	hs := cfg.HardState
	n.epoch = hs.LeaderEpoch
	switch {
	case hs.LeaderEpoch < n.lastEpoch:
		// The log has seen a newer epoch than quorum-state: trust the log.
		n.becomeUnattached(n.lastEpoch, -1)
	case hs.LeaderID == n.id && n.isVoter:
		n.votedID, n.votedDir = hs.VotedID, hs.VotedDirectoryID
		n.leaderID = n.id
		n.becomeResigned(nil)
	case hs.VotedID == n.id && n.isVoter:
		n.votedID, n.votedDir = n.id, n.cfg.DirectoryID
		n.role = RoleCandidate
		n.granted, n.rejected = map[int32]bool{n.id: true}, map[int32]bool{}
		n.electionDeadline = n.randomElectionDeadline()
	case hs.LeaderID >= 0 && hs.LeaderID != n.id:
		n.votedID, n.votedDir = hs.VotedID, hs.VotedDirectoryID
		n.becomeFollower(hs.LeaderEpoch, hs.LeaderID)
	default:
		n.votedID, n.votedDir = hs.VotedID, hs.VotedDirectoryID
		n.becomeUnattached(hs.LeaderEpoch, -1)
	}
	n.prevSoft = n.softState()
	return n, nil
}

// ---- Public inputs -------------------------------------------------------

// Tick advances the logical clock to nowMs (never backwards) and fires any
// timer that expired: election, fetch, check-quorum, BeginQuorumEpoch resend,
// parked-fetch expiry, request timeouts, the idle record.
func (n *Node) Tick(nowMs int64) {
	if nowMs > n.now {
		n.now = nowMs
	}
	if n.fatal != nil {
		return
	}
	n.expireRequests()
	switch n.role {
	case RoleUnattached:
		if n.isVoter && n.now >= n.electionDeadline {
			n.becomeProspective()
		}
	case RoleProspective:
		if n.now >= n.electionDeadline {
			n.prospectiveLost()
		}
	case RoleCandidate:
		if n.now >= n.electionDeadline {
			n.becomeProspective()
		}
	case RoleFollower:
		if n.now >= n.fetchDeadline && n.isVoter {
			n.becomeProspective()
		}
	case RoleResigned:
		if n.now >= n.electionDeadline {
			n.becomeUnattached(n.epoch+1, -1)
		}
	case RoleLeader:
		n.tickLeader()
	}
	n.poll()
}

// Step feeds one inbound message: a request from a peer, a response to one
// of the core's requests, or a failure report (Err) for one of them. The
// error is non-nil only for a fatal condition (a safety violation seen on
// the wire); the node then refuses further input.
func (n *Node) Step(m Message) error {
	if n.fatal != nil {
		return n.fatal
	}
	switch {
	case m.Request != nil:
		n.stepRequest(m)
	case m.Response != nil || m.Err != nil:
		out, ok := n.reqs.take(m.ReqID)
		if !ok {
			return nil // a duplicate, or a request already timed out
		}
		if m.Err != nil {
			n.handleFailure(out)
		} else {
			n.stepResponse(m, out)
		}
	}
	if n.fatal == nil {
		n.poll()
	}
	return n.fatal
}

// Propose appends records (metadata record values) as data records at the
// leader. Proposals made before the next Ready are written as one batch
// (group commit). It returns the offset of the first record and the epoch.
func (n *Node) Propose(records [][]byte) (baseOffset int64, epoch int32, err error) {
	if n.role != RoleLeader {
		return -1, n.epoch, ErrNotLeader
	}
	if len(records) == 0 {
		return n.endOffset, n.epoch, nil
	}
	if len(n.proposals) == 0 {
		n.proposalBase = n.endOffset
	}
	base := n.endOffset
	for _, r := range records {
		n.proposals = append(n.proposals, slices.Clone(r))
	}
	n.endOffset += int64(len(records))
	n.lastEpoch = n.epoch
	n.lead.lastAppendMs = n.now
	return base, n.epoch, nil
}

// Resign makes a leader step down gracefully (shutdown): it becomes
// Resigned and sends EndQuorumEpoch naming its successors by fetch offset.
func (n *Node) Resign() {
	if n.role == RoleLeader {
		n.becomeResigned(n.lead.progress.successors())
		n.poll()
	}
}

// HasReady reports whether Ready would hand out any work.
func (n *Node) HasReady() bool {
	return n.hardState() != n.persisted || len(n.msgs) > 0 || len(n.proposals) > 0 ||
		len(n.appendBuf) > 0 || n.truncate != nil || n.snapChunk != nil ||
		n.hw != n.prevHW || n.softState() != n.prevSoft
}

// Ready returns the work accumulated since the last Advance. Do not call
// Step, Tick or Propose between Ready and Advance.
func (n *Node) Ready() Ready {
	n.encodeProposals()
	n.readyHS = n.hardState()
	// A leader whose epoch and vote are already durable may ship records
	// before they are durable on its own disk (Raft thesis 10.2.1): its
	// own end offset counts toward the high watermark only after Advance,
	// so nothing commits until a majority has synced. Its fsync and the
	// followers' then overlap instead of following one another.
	sendFirst := n.role == RoleLeader && n.readyHS == n.persisted && n.truncate == nil && n.snapChunk == nil
	if sendFirst && len(n.appendBuf) > 0 {
		n.completeParkedFetches(func(p parkedFetch) bool { return p.offset < n.endOffset })
	}
	rd := Ready{
		SnapshotWrite: n.snapChunk,
		Truncate:      n.truncate,
		Append:        n.appendBuf,
		Messages:      n.msgs,
		SendFirst:     sendFirst,
		HighWatermark: n.hw,
		SoftState:     n.softState(),
	}
	if n.readyHS != n.persisted {
		hs := n.readyHS
		rd.HardState = &hs
	}
	rd.MustSync = n.readyMustSync()
	return rd
}

// readyMustSync reports whether the Ready handed out (and not yet
// advanced) asks for an fsync.
func (n *Node) readyMustSync() bool {
	return n.readyHS != n.persisted || len(n.appendBuf) > 0 || n.truncate != nil ||
		(n.snapChunk != nil && n.snapChunk.Done)
}

// Advance tells the node the last Ready was applied: HardState and log
// changes are durable, messages were sent. The Log now reflects the changes.
func (n *Node) Advance() { n.advance(true) }

// AdvanceWritten is Advance for a SendFirst Ready whose Append was written
// to the Log but not yet fsynced. The leader's copy of it counts toward the
// high watermark only once LeaderSynced reports it durable; meanwhile the
// node goes on taking fetches, so a follower's acknowledgement is not held
// up behind the leader's fsync, and the slower of the two no longer sets
// the pace of a commit alone.
func (n *Node) AdvanceWritten() { n.advance(false) }

// LeaderSynced reports that the leader of epoch has its log durable below
// endOffset. A report for another epoch or role is ignored: the shell must
// finish every deferred fsync before it persists anything else (a HardState,
// a truncation), so a stale report can never describe replaced records.
func (n *Node) LeaderSynced(epoch int32, endOffset int64) {
	if n.role != RoleLeader || n.epoch != epoch {
		return
	}
	n.leaderDurableTo(min(endOffset, n.log.EndOffset()))
	n.poll()
}

func (n *Node) advance(synced bool) {
	// Only an fsync makes the log durable, up to its end: an Advance
	// without one may follow records whose fsync was deferred.
	synced = synced && n.readyMustSync()
	n.persisted = n.readyHS
	finished := n.snapChunk != nil && n.snapChunk.Done
	if finished {
		if n.hw < n.snapChunk.ID.EndOffset {
			n.hw = n.snapChunk.ID.EndOffset
		}
		n.snap = nil
	}
	n.msgs, n.appendBuf, n.truncate, n.snapChunk = nil, nil, nil, nil
	n.prevSoft, n.prevHW = n.softState(), n.hw
	n.reloadLogEnd()
	if n.role == RoleLeader {
		leo := n.log.EndOffset()
		if synced {
			n.leaderDurableTo(leo)
		}
		n.completeParkedFetches(func(p parkedFetch) bool { return p.offset < leo })
	}
	n.poll()
}

// ---- Status --------------------------------------------------------------

// Status is a snapshot of the node's state for tests, metrics and tools.
type Status struct {
	SoftState
	HardState     HardState
	HighWatermark int64
	EndOffset     int64
	LastEpoch     int32
}

// Status reports the node's current state.
func (n *Node) Status() Status {
	return Status{SoftState: n.softState(), HardState: n.hardState(), HighWatermark: n.hw, EndOffset: n.endOffset, LastEpoch: n.lastEpoch}
}

func (n *Node) softState() SoftState {
	return SoftState{Role: n.role, LeaderID: n.leaderID, Epoch: n.epoch, VotedID: n.votedID, IsVoter: n.isVoter,
		EpochCommitted: n.role == RoleLeader && n.lead.progress.hw >= 0}
}

// hardState is what quorum-state must hold for the current role. Prospective
// and Resigned are memory-only: they keep the last durable election state.
func (n *Node) hardState() HardState {
	return HardState{LeaderID: n.leaderID, LeaderEpoch: n.epoch, VotedID: n.votedID, VotedDirectoryID: n.votedDir}
}

// ---- Transitions ---------------------------------------------------------

// leaveRole drops per-role state before any transition.
func (n *Node) leaveRole() {
	if n.lead != nil {
		n.failParkedFetches()
		n.lead = nil
		n.proposals = nil // a leader's unflushed proposals die with it
		n.reloadLogEndWithPending()
	}
	n.granted, n.rejected = nil, nil
	n.unacked, n.preferred = nil, nil
	n.reqs.leaveRole()
	n.snap = nil
	n.hasFetchedFromLeader = false
}

// becomeUnattached moves to epoch with no leader known (or leader known but
// unreachable). A vote is kept only within the same epoch.
func (n *Node) becomeUnattached(epoch int32, leader int32) {
	keepTimer := n.role == RoleCandidate || n.role == RoleUnattached || n.role == RoleResigned ||
		(n.role == RoleProspective && !n.electionLost())
	if epoch != n.epoch {
		n.votedID, n.votedDir = -1, [16]byte{}
	}
	n.leaveRole()
	n.role, n.epoch, n.leaderID = RoleUnattached, epoch, leader
	if !keepTimer || n.electionDeadline == 0 {
		n.electionDeadline = n.randomElectionDeadline()
	}
	n.fetchDeadline = n.now + n.cfg.FetchTimeoutMs
}

// becomeProspective starts a pre-vote (KIP-996): no epoch bump, nothing
// persisted.
func (n *Node) becomeProspective() {
	leader := n.leaderID
	n.leaveRole()
	n.role, n.leaderID = RoleProspective, leader
	n.granted, n.rejected = map[int32]bool{n.id: true}, map[int32]bool{}
	n.electionDeadline = n.randomElectionDeadline()
	n.maybeWinElection()
}

// becomeCandidate bumps the epoch and votes for itself; the HardState with
// the vote leaves in the same Ready as, and is written before, the requests.
func (n *Node) becomeCandidate() {
	n.leaveRole()
	n.role, n.epoch, n.leaderID = RoleCandidate, n.epoch+1, -1
	n.votedID, n.votedDir = n.id, n.cfg.DirectoryID
	n.granted, n.rejected = map[int32]bool{n.id: true}, map[int32]bool{}
	n.electionDeadline = n.randomElectionDeadline()
	n.maybeWinElection()
}

// becomeLeader takes over the epoch: the HW is forgotten until a record of
// this epoch commits, the start-of-epoch control batch is appended and
// BeginQuorumEpoch goes to every other voter at once.
func (n *Node) becomeLeader() {
	granting := make([]int32, 0, len(n.granted))
	for id, ok := range n.granted {
		if ok {
			granting = append(granting, id)
		}
	}
	slices.Sort(granting)
	n.leaveRole()
	n.role, n.leaderID = RoleLeader, n.id
	n.lead = &leaderState{
		progress:      newProgressTracker(n.id, n.isVoter, n.voters, n.endOffset, n.log.EndOffset(), n.now, n.cfg.FetchTimeoutMs*3/2),
		granting:      granting,
		beginQuorumAt: n.now,
		lastAppendMs:  n.now,
	}
	var records []VoterRecord
	if n.cfg.KRaftVersion >= 1 {
		for _, v := range n.voters {
			records = append(records, VoterRecord{ID: v, Endpoints: n.cfg.Voters[v], MinKRaft: 0, MaxKRaft: 1})
		}
	}
	b := startOfEpochBatch(n.endOffset, n.epoch, n.now, n.id, n.voters, granting, n.cfg.KRaftVersion, records)
	n.appendBatches(b)
}

// becomeFollower follows leader in epoch; a vote is kept within the epoch.
func (n *Node) becomeFollower(epoch, leader int32) {
	if epoch != n.epoch {
		n.votedID, n.votedDir = -1, [16]byte{}
	}
	n.leaveRole()
	n.role, n.epoch, n.leaderID = RoleFollower, epoch, leader
	n.fetchDeadline = n.now + n.cfg.FetchTimeoutMs
}

// becomeResigned leaves leadership without persisting anything: the node
// answers as a non-leader, sends EndQuorumEpoch and, after an election
// timeout, moves to Unattached in the next epoch.
func (n *Node) becomeResigned(successors []int32) {
	n.leaveRole()
	n.role, n.leaderID = RoleResigned, n.id
	n.preferred = successors
	n.unacked = map[int32]bool{}
	for _, v := range n.voters {
		if v != n.id {
			n.unacked[v] = true
		}
	}
	n.electionDeadline = n.randomElectionDeadline()
}

// randomElectionDeadline draws the timeout in [T, 2T) like Apache's
// QuorumState.randomElectionTimeoutMs.
func (n *Node) randomElectionDeadline() int64 {
	t := n.cfg.ElectionTimeoutMs
	return n.now + t + n.rand.Int64N(t)
}

func (n *Node) electionLost() bool {
	return n.rejected != nil && len(n.rejected) > len(n.voters)-majority(len(n.voters))
}

// maybeWinElection moves a nominee forward once a majority granted.
func (n *Node) maybeWinElection() {
	count := 0
	for _, ok := range n.granted {
		if ok {
			count++
		}
	}
	if count < majority(len(n.voters)) {
		return
	}
	switch n.role {
	case RoleProspective:
		n.becomeCandidate()
	case RoleCandidate:
		n.becomeLeader()
	}
}

// prospectiveLost returns a losing (or timed out) pre-vote to Follower when
// a leader is known, else to Unattached, in the same epoch.
func (n *Node) prospectiveLost() {
	if n.leaderID >= 0 && n.leaderID != n.id {
		n.becomeFollower(n.epoch, n.leaderID)
	} else {
		n.becomeUnattached(n.epoch, n.leaderID)
	}
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

// ---- Requests ------------------------------------------------------------

func (n *Node) stepRequest(m Message) {
	switch req := m.Request.(type) {
	case *kmsg.VoteRequest:
		n.respond(m, n.handleVote(req))
	case *kmsg.BeginQuorumEpochRequest:
		n.respond(m, n.handleBeginQuorum(req))
	case *kmsg.EndQuorumEpochRequest:
		n.respond(m, n.handleEndQuorum(req))
	case *kmsg.FetchRequest:
		n.handleFetch(m, req)
	case *kmsg.FetchSnapshotRequest:
		n.respond(m, n.handleFetchSnapshot(req))
	case *kmsg.DescribeQuorumRequest:
		n.respond(m, n.handleDescribeQuorum(req))
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
	if p.LastOffset < 0 || p.LastOffsetEpoch < 0 || illegalEpoch {
		return n.buildVoteResponse(req.Version, errInvalidRequest, false)
	}
	if p.CandidateEpoch < n.epoch {
		return n.buildVoteResponse(req.Version, errFencedLeaderEpoch, false)
	}
	if p.CandidateID < 0 {
		return n.buildVoteResponse(req.Version, errInvalidRequest, false)
	}
	if p.CandidateEpoch > n.epoch {
		n.becomeUnattached(p.CandidateEpoch, -1)
	}
	if req.Version >= 1 && req.VoterID >= 0 &&
		(req.VoterID != n.id || (p.VoterDirectoryID != [16]byte{} && p.VoterDirectoryID != n.cfg.DirectoryID)) {
		return n.buildVoteResponse(req.Version, errInvalidVoterKey, false)
	}
	upToDate := compareOffsetEpoch(p.LastOffset, p.LastOffsetEpoch, n.endOffset, n.lastEpoch) >= 0
	candDir := [16]byte{}
	if req.Version >= 1 {
		candDir = p.CandidateDirectoryID
	}
	granted := n.canGrantVote(p.CandidateID, candDir, upToDate, preVote)
	if granted && !preVote && n.votedID < 0 && (n.role == RoleUnattached || n.role == RoleProspective) {
		// Persisted through HardState before the response leaves; the
		// election timer restarts because the candidate is as likely as us
		// to win.
		n.votedID, n.votedDir = p.CandidateID, candDir
		n.electionDeadline = n.randomElectionDeadline()
	}
	return n.buildVoteResponse(req.Version, errNone, granted)
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

func (n *Node) canGrantVote(cand int32, dir [16]byte, upToDate, preVote bool) bool {
	switch n.role {
	case RoleUnattached, RoleProspective:
		switch {
		case preVote:
			return upToDate
		case n.votedID >= 0:
			return n.votedID == cand && (n.votedDir == [16]byte{} || n.votedDir == dir)
		case n.leaderID >= 0:
			return false
		}
		return upToDate
	case RoleFollower:
		// A follower still hearing from its leader refuses pre-votes, so a
		// partitioned node cannot disrupt a healthy quorum.
		return preVote && !n.hasFetchedFromLeader && upToDate
	case RoleCandidate, RoleResigned:
		return preVote && upToDate
	}
	return false // Leader
}

func (n *Node) handleBeginQuorum(req *kmsg.BeginQuorumEpochRequest) *kmsg.BeginQuorumEpochResponse {
	if !n.clusterIDOK(req.ClusterID) {
		r := n.buildBeginQuorumResponse(req.Version, errNone)
		r.ErrorCode, r.Topics = errInconsistentClusterID, nil
		return r
	}
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 ||
		!singlePartition(1, req.Topics[0].Topic, 1, req.Topics[0].Partitions[0].Partition) {
		r := n.buildBeginQuorumResponse(req.Version, errNone)
		r.ErrorCode, r.Topics = errInvalidRequest, nil
		return r
	}
	p := req.Topics[0].Partitions[0]
	if code := n.validateVoterOnly(p.LeaderID, p.LeaderEpoch); code != errNone {
		return n.buildBeginQuorumResponse(req.Version, code)
	}
	n.maybeTransition(p.LeaderID, p.LeaderEpoch)
	if req.Version >= 1 && req.VoterID >= 0 &&
		(req.VoterID != n.id || (p.VoterDirectoryID != [16]byte{} && p.VoterDirectoryID != n.cfg.DirectoryID)) {
		return n.buildBeginQuorumResponse(req.Version, errInvalidVoterKey)
	}
	return n.buildBeginQuorumResponse(req.Version, errNone)
}

func (n *Node) validateVoterOnly(remote, epoch int32) int16 {
	switch {
	case epoch < n.epoch:
		return errFencedLeaderEpoch
	case remote < 0:
		return errInvalidRequest
	}
	return errNone
}

func (n *Node) validateLeaderOnly(epoch int32) int16 {
	switch {
	case epoch < n.epoch:
		return errFencedLeaderEpoch
	case epoch > n.epoch:
		return errUnknownLeaderEpoch
	case n.role != RoleLeader:
		return errNotLeaderOrFollower
	}
	return errNone
}

func (n *Node) handleEndQuorum(req *kmsg.EndQuorumEpochRequest) *kmsg.EndQuorumEpochResponse {
	if !n.clusterIDOK(req.ClusterID) {
		r := n.buildEndQuorumResponse(req.Version, errNone)
		r.ErrorCode, r.Topics = errInconsistentClusterID, nil
		return r
	}
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 ||
		!singlePartition(1, req.Topics[0].Topic, 1, req.Topics[0].Partitions[0].Partition) {
		r := n.buildEndQuorumResponse(req.Version, errNone)
		r.ErrorCode, r.Topics = errInvalidRequest, nil
		return r
	}
	p := req.Topics[0].Partitions[0]
	if code := n.validateVoterOnly(p.LeaderID, p.LeaderEpoch); code != errNone {
		return n.buildEndQuorumResponse(req.Version, code)
	}
	n.maybeTransition(p.LeaderID, p.LeaderEpoch)
	if n.role == RoleFollower && n.leaderID == p.LeaderID {
		candidates := p.PreferredSuccessors
		if req.Version >= 1 {
			candidates = nil
			for _, c := range p.PreferredCandidates {
				candidates = append(candidates, c.CandidateID)
			}
		}
		n.fetchDeadline = n.now + n.endEpochBackoff(candidates)
	}
	return n.buildEndQuorumResponse(req.Version, errNone)
}

// endEpochBackoff is Apache's strict exponential backoff by position in the
// resigning leader's preferred list: the first candidate runs at once.
func (n *Node) endEpochBackoff(candidates []int32) int64 {
	pos := slices.Index(candidates, n.id)
	if pos < 0 {
		pos = len(candidates)
	}
	maxMs := n.cfg.ElectionBackoffMaxMs
	if pos == 0 {
		return 0
	}
	if pos >= len(candidates) {
		return maxMs
	}
	base := maxMs >> (len(candidates) - 1)
	return min(maxMs, base<<(pos-1))
}

// ---- Responses -----------------------------------------------------------

func (n *Node) stepResponse(m Message, out outRequest) {
	switch resp := m.Response.(type) {
	case *kmsg.VoteResponse:
		n.handleVoteResponse(m.From, resp, out)
	case *kmsg.BeginQuorumEpochResponse:
		if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			p := resp.Topics[0].Partitions[0]
			n.handleCommonResponse(p.ErrorCode, p.LeaderID, p.LeaderEpoch)
		}
	case *kmsg.EndQuorumEpochResponse:
		if resp.ErrorCode != errNone || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			n.backoff(m.From)
			return
		}
		p := resp.Topics[0].Partitions[0]
		if n.handleCommonResponse(p.ErrorCode, p.LeaderID, p.LeaderEpoch) {
			return
		}
		if n.role == RoleResigned && out.epoch == n.epoch && p.ErrorCode == errNone {
			delete(n.unacked, m.From)
		}
	case *kmsg.FetchResponse:
		n.handleFetchResponse(m.From, resp, out)
	case *kmsg.FetchSnapshotResponse:
		n.handleFetchSnapshotResponse(m.From, resp, out)
	}
}

// handleCommonResponse applies the leader and epoch carried by a response
// (Apache's maybeHandleCommonResponse). It returns true when the response
// needs no further handling.
func (n *Node) handleCommonResponse(code int16, leader, epoch int32) bool {
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

func (n *Node) handleVoteResponse(from int32, resp *kmsg.VoteResponse, out outRequest) {
	nominee := n.role == RoleProspective || n.role == RoleCandidate
	if resp.ErrorCode == errUnsupportedVersion && n.role == RoleProspective && out.preVote && out.epoch == n.epoch {
		n.becomeCandidate()
		return
	}
	if resp.ErrorCode != errNone || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		n.backoff(from)
		return
	}
	p := resp.Topics[0].Partitions[0]
	if n.handleCommonResponse(p.ErrorCode, p.LeaderID, p.LeaderEpoch) {
		return
	}
	// VoteResponse does not say whether it answers a pre-vote: match it to
	// the role and epoch we asked in.
	if !nominee || p.ErrorCode != errNone || out.epoch != n.epoch || out.role != n.role {
		return
	}
	if p.VoteGranted {
		n.granted[from] = true
		n.maybeWinElection()
		return
	}
	n.rejected[from] = true
	if n.role == RoleProspective && n.electionLost() {
		n.prospectiveLost()
	}
	// A rejected Candidate waits out its election timeout, then pre-votes.
}

func (n *Node) handleFetchResponse(from int32, resp *kmsg.FetchResponse, out outRequest) {
	if resp.ErrorCode != errNone || !fetchResponseTopicOK(resp) {
		n.backoff(from)
		return
	}
	p := &resp.Topics[0].Partitions[0]
	current := n.sentInThisState(out)
	if n.handleCommonResponse(p.ErrorCode, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch) {
		n.backoffUnlessMoved(from, p.ErrorCode, out)
		return
	}
	if !current || n.role != RoleFollower || from != n.leaderID || n.snap != nil {
		return
	}
	switch {
	case p.DivergingEpoch.Epoch >= 0:
		if n.hw >= 0 && p.DivergingEpoch.EndOffset < n.hw {
			n.fatal = fmt.Errorf("%w: node %d asked to truncate to %d, high watermark %d", ErrTruncateBelowHighWatermark, n.id, p.DivergingEpoch.EndOffset, n.hw)
			return
		}
		n.truncateToEndOffset(p.DivergingEpoch.EndOffset, p.DivergingEpoch.Epoch)
	case p.SnapshotID.Epoch >= 0 || p.SnapshotID.EndOffset >= 0:
		if p.SnapshotID.Epoch < 0 || p.SnapshotID.EndOffset < 0 {
			return
		}
		n.snap = &snapshotDownload{id: SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}}
	default:
		n.appendAsFollower(p.RecordBatches)
		if p.HighWatermark >= 0 {
			n.updateFollowerHighWatermark(min(n.endOffset, p.HighWatermark))
		}
	}
	n.fetchDeadline = n.now + n.cfg.FetchTimeoutMs
	n.hasFetchedFromLeader = true
}

func (n *Node) updateFollowerHighWatermark(hw int64) {
	if hw > n.hw {
		n.hw = hw
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

// ---- Outbound requests ---------------------------------------------------

// poll sends whatever the current role owes its peers.
func (n *Node) poll() {
	if n.fatal != nil {
		return
	}
	switch n.role {
	case RoleProspective, RoleCandidate:
		n.sendVotes()
	case RoleFollower:
		if n.isVoter || n.now < n.fetchDeadline {
			n.maybeSendFetch(n.leaderID)
		} else {
			n.maybeSendBootstrapFetch()
		}
	case RoleUnattached:
		n.maybeSendBootstrapFetch()
	case RoleLeader:
		n.sendBeginQuorum()
	case RoleResigned:
		n.sendEndQuorum()
	}
}

func (n *Node) sendVotes() {
	if !n.logSettled() {
		return
	}
	preVote := n.role == RoleProspective
	for _, v := range n.voters {
		if v == n.id || n.granted[v] || n.rejected[v] || !n.canSend(v, keyVote) {
			continue
		}
		if preVote && n.version(v, keyVote) < 2 {
			// The peer cannot carry PreVote: as Apache maps this to
			// UNSUPPORTED_VERSION, go straight to a standard election.
			n.becomeCandidate()
			n.sendVotes()
			return
		}
		n.send(v, n.buildVoteRequest(v, preVote), preVote)
	}
}

func (n *Node) maybeSendFetch(to int32) {
	if to < 0 || to == n.id || n.reqs.fetching != 0 || !n.logSettled() || !n.canSend(to, keyFetch) || !n.canSend(to, keyFetchSnapshot) {
		return
	}
	if n.snap != nil {
		n.reqs.fetching = n.send(to, n.buildFetchSnapshotRequest(to, n.snap.id, n.snap.pos), false)
		return
	}
	n.reqs.fetching = n.send(to, n.buildFetchRequest(to), false)
}

// maybeSendBootstrapFetch asks a random voter, to discover the leader.
func (n *Node) maybeSendBootstrapFetch() {
	if n.reqs.fetching != 0 || !n.logSettled() {
		return
	}
	var ready []int32
	for _, v := range n.voters {
		if v != n.id && n.canSend(v, keyFetch) {
			ready = append(ready, v)
		}
	}
	if len(ready) == 0 {
		return
	}
	to := ready[n.rand.IntN(len(ready))]
	n.reqs.fetching = n.send(to, n.buildFetchRequest(to), false)
}

func (n *Node) sendBeginQuorum() {
	if n.now < n.lead.beginQuorumAt {
		return
	}
	for _, v := range n.voters {
		if v != n.id && n.canSend(v, keyBeginQuorum) {
			n.send(v, n.buildBeginQuorumRequest(v), false)
		}
	}
	n.lead.beginQuorumAt = n.now + n.cfg.FetchTimeoutMs/2
}

func (n *Node) sendEndQuorum() {
	for _, v := range n.voters {
		if n.unacked[v] && n.canSend(v, keyEndQuorum) {
			n.send(v, n.buildEndQuorumRequest(v, n.preferred), false)
		}
	}
}

// ---- Leader log ----------------------------------------------------------

func (n *Node) tickLeader() {
	if n.lead.progress.quorumLost(n.now) {
		// Check-quorum: no fetches from a majority for 1.5 fetch timeouts.
		n.becomeResigned(n.lead.progress.successors())
		return
	}
	n.expireParkedFetches()
	// No idle record before this epoch's first commit: until then the shell
	// has not seen the leader's high watermark, so its controller has not
	// written its activation records (the bootstrap feature levels of an
	// empty log). An idle record ahead of them would be the first data an
	// Apache follower commits, and its metadata loader stops the process
	// when it must publish an image without metadata.version.
	if n.cfg.IdleRecord != nil && n.lead.progress.hw >= 0 && n.now-n.lead.lastAppendMs >= n.cfg.IdleIntervalMs {
		if v := n.cfg.IdleRecord(); v != nil {
			_, _, _ = n.Propose([][]byte{v})
		}
	}
}
