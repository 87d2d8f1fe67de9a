// node.go owns the Node type and its public inputs and outputs: New, Tick,
// Step, Propose, Resign, Ready, Advance and Status. Everything they do by
// role is in the role table (roles.go) and the step_*.go files.

package quorum

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/kraftd/kraftd/kafkaconfig"
)

// Node is one KRaft replica (voter or observer) as a pure state machine.
// It is not safe for concurrent use; see the package doc for the Ready loop.
type Node struct {
	cfg  Config
	id   int32
	log  Log
	rand *rand.Rand
	now  int64

	// control is the voter set and kraft.version along the log
	// (voters.go); voterSet, voters and isVoter are its newest set as the
	// rest of the node reads it (refreshVoters).
	control  controlHistory
	voterSet VoterSet
	voters   []int32 // sorted voter ids
	isVoter  bool

	role     Role
	epoch    int32
	leaderID int32 // -1 when unknown
	votedID  int32 // -1 when none
	votedDir [16]byte
	// hw is the local high watermark: monotonic, -1 until known. It is what
	// the shell may apply up to. A leader's protocol HW lives in lead.progress.hw.
	hw int64

	// electionDeadline drives Unattached, Prospective, Candidate and Resigned.
	electionDeadline int64
	// fetchDeadline drives Follower (and observers' bootstrap fallback).
	fetchDeadline        int64
	hasFetchedFromLeader bool
	// heardUntil is when a follower stops counting its leader as live
	// (hasFetchedFromLeader) unless it hears from it again; leaderSilent
	// says it stopped so, by the silence bound (silence.go).
	heardUntil   int64
	leaderSilent bool
	// askTimeout is how long the leader has to answer the follower's next
	// request, from when it leaves (silence.go, askedLeader); askMade says
	// that request is in the Ready being handled.
	askTimeout int64
	askMade    bool
	// leaderContactMs is when a follower or observer last heard from its
	// leader (Status.LeaderContactMs), -1 when never.
	leaderContactMs int64
	// updateVoterAt is when a voter following a leader next considers
	// telling it its listeners (UpdateRaftVoter); leaderUpdated says the
	// leader of this epoch took them.
	updateVoterAt int64
	leaderUpdated bool
	// leaderGoneCount counts the follower's fetches to its leader in a row
	// that failed with ErrPeerGone, since the leader last answered.
	leaderGoneCount int

	// Nominee (Prospective/Candidate) election state.
	granted  map[int32]bool
	rejected map[int32]bool
	// reaskUntil: this pre-vote began because the leader's process was
	// found gone, or the leader silent, so a voter that refused it is
	// asked again until then (see stepNominee).
	reaskUntil int64
	// escalateAt: this pre-vote began because the leader's process was
	// found gone; a voter other than the leader that still refuses it
	// from then on gets a standard election (stepNominee). 0: never.
	escalateAt int64

	// lead is the leader's state, nil in every other role.
	lead *leaderState

	// Resigned: voters that have not acknowledged EndQuorumEpoch yet, and the
	// successors ordered by fetch offset.
	unacked   map[int32]bool
	preferred []int32

	// leaderEndpoints holds the newest leader's endpoint, as a Fetch
	// answer named it (bootstrap.go).
	leaderEndpoints map[int32]Endpoint

	// snap is the follower's snapshot download, nil when none.
	snap *snapshotDownload

	// reqs are the node's own requests in flight.
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

// leaderState is what a leader keeps for its epoch; it is dropped when the
// leadership ends.
type leaderState struct {
	progress      progressTracker
	granting      []int32 // the voters that elected it, for LeaderChange
	beginQuorumAt int64   // when BeginQuorumEpoch goes out again
	lastAppendMs  int64   // for the idle record
	parked        []parkedFetch
	// change is the voter change in flight (reconfig.go), nil when none.
	change *voterChange
	// volatileVoters are the voters' listeners UpdateRaftVoter gave at
	// kraft.version 0, kept in memory as Apache keeps them.
	volatileVoters VoterSet
	// resignRequested: the voter set that removed this leader committed;
	// it resigns at its next poll.
	resignRequested bool
	// unsyncedSince is when the leader's own fsync of records it shipped
	// first (AdvanceWritten) began, -1 when its log is durable.
	unsyncedSince int64
}

// New builds a node from its config, quorum-state and log. The initial role
// follows Apache's QuorumState.initialize: leader of the stored epoch →
// Resigned; voted for itself → Candidate; known leader → Follower; else
// Unattached (keeping any vote).
func New(cfg Config) (*Node, error) {
	if cfg.Log == nil || cfg.Rand == nil {
		return nil, errors.New("quorum: Config.Log and Config.Rand are required")
	}
	defaults := []struct {
		v   *int64
		key string
	}{
		{&cfg.ElectionTimeoutMs, "controller.quorum.election.timeout.ms"}, {&cfg.FetchTimeoutMs, "controller.quorum.fetch.timeout.ms"},
		{&cfg.ElectionBackoffMaxMs, "controller.quorum.election.backoff.max.ms"}, {&cfg.RequestTimeoutMs, "controller.quorum.request.timeout.ms"},
		{&cfg.RetryBackoffMs, "controller.quorum.retry.backoff.ms"}, {&cfg.IdleIntervalMs, "metadata.max.idle.interval.ms"},
	}
	for _, d := range defaults {
		if *d.v <= 0 {
			*d.v = kafkaconfig.DefaultInt(d.key)
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
		leaderID: -1, votedID: -1, hw: -1, prevHW: -1, leaderContactMs: -1, now: cfg.NowMs,
		reqs:      newRequestTracker(),
		persisted: cfg.HardState,
	}
	var err error
	if n.control, err = loadControlHistory(cfg.Log, StaticVoterSet(cfg.Voters)); err != nil {
		return nil, err
	}
	n.refreshVoters()
	if len(n.voters) == 0 && len(cfg.BootstrapServers) == 0 {
		return nil, fmt.Errorf("%w: Config.Voters and Config.BootstrapServers are empty and neither the log nor a snapshot names a voter set", ErrNoVoterSet)
	}
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
	case hs.LeaderID == n.id && n.electable():
		n.votedID, n.votedDir = hs.VotedID, hs.VotedDirectoryID
		n.leaderID = n.id
		n.becomeResigned(nil)
	case hs.VotedID == n.id && n.electable():
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
	n.rules().tick(n)
	n.poll()
}

// SetTime moves the core's clock to nowMs, never back, without running
// its timers (Tick does). The shell calls it before Advance when handling
// a Ready took time (an fsync): what the Advance starts, a follower's wait
// for its leader's answer (silence.go), then starts when the messages left.
func (n *Node) SetTime(nowMs int64) {
	if nowMs > n.now {
		n.now = nowMs
	}
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
			n.handleFailure(out, m.Err)
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
	n.lead.unsyncedSince = -1
	if endOffset < n.log.EndOffset() {
		// The shell's next fsync, for the rest, starts now.
		n.lead.unsyncedSince = n.now
	}
	n.leaderDurableTo(min(endOffset, n.log.EndOffset()))
	n.poll()
}

func (n *Node) advance(synced bool) {
	// Only an fsync makes the log durable, up to its end: an Advance
	// without one may follow records whose fsync was deferred.
	mustSync := n.readyMustSync()
	synced = synced && mustSync
	n.persisted = n.readyHS
	finished := n.snapChunk != nil && n.snapChunk.Done
	var installed SnapshotID
	if finished {
		installed = n.snapChunk.ID
		if n.hw < n.snapChunk.ID.EndOffset {
			n.hw = n.snapChunk.ID.EndOffset
		}
		n.snap = nil
	}
	if n.askMade {
		n.askMade = false
		n.askedLeader()
	}
	n.msgs, n.appendBuf, n.truncate, n.snapChunk = nil, nil, nil, nil
	n.prevSoft, n.prevHW = n.softState(), n.hw
	n.reloadLogEnd()
	if finished {
		n.installedSnapshot(installed)
	}
	n.control.forgetBefore(n.log.StartOffset())
	if n.role == RoleLeader {
		leo := n.log.EndOffset()
		if synced {
			n.lead.unsyncedSince = -1
			n.leaderDurableTo(leo)
		} else if mustSync && n.lead.unsyncedSince < 0 {
			n.lead.unsyncedSince = n.now
		}
		n.completeParkedFetches(func(p parkedFetch) bool { return p.offset < leo })
	}
	n.poll()
}

// ---- Status --------------------------------------------------------------

// Status is a snapshot of the node's state for tests, metrics and tools.
type Status struct {
	SoftState
	// KRaftVersion and Voters are the finalized kraft.version and the
	// voter set as of the log end; Voters is shared, never to be changed.
	KRaftVersion int16
	Voters       VoterSet
	// VotersOffset is the offset of the VotersRecord that set Voters, -1
	// for the static set: Voters is committed once it is below
	// HighWatermark.
	VotersOffset  int64
	HardState     HardState
	HighWatermark int64
	EndOffset     int64
	LastEpoch     int32
	// LeaderContactMs is when this node last knew its epoch's leader live,
	// on the core's clock, -1 when never: on a follower or observer the
	// last answer from the leader (a Fetch or FetchSnapshot answer, or
	// BeginQuorumEpoch); on a leader the time by which a majority of the
	// voters, itself counted at now, had fetched. Readiness checks read it.
	LeaderContactMs int64
	// Observers is how many observers a leader tracks (0 elsewhere), and
	// UncommittedVoterChange says a leader appended a VotersRecord that has
	// not committed yet: Apache's number-of-observers and
	// uncommitted-voter-change.
	Observers              int
	UncommittedVoterChange bool
	// IgnoredStaticVoters says controller.quorum.voters is set but the
	// log holds a VotersRecord, whose set the node follows instead
	// (Apache's IgnoredStaticVoters).
	IgnoredStaticVoters bool
}

// Status reports the node's current state.
func (n *Node) Status() Status {
	st := Status{SoftState: n.softState(), KRaftVersion: n.control.kraftVersion(), Voters: n.voterSet,
		HardState: n.hardState(), HighWatermark: n.hw, EndOffset: n.endOffset, LastEpoch: n.lastEpoch,
		LeaderContactMs: n.leaderContactMs, IgnoredStaticVoters: len(n.control.static) > 0 && len(n.control.voters) > 0,
		VotersOffset: -1}
	if off, ok := n.control.lastOffset(); ok {
		st.VotersOffset = off
	}
	if n.role == RoleLeader {
		pr := &n.lead.progress
		st.LeaderContactMs = pr.majorityFetchedAt(n.now)
		st.Observers = len(pr.observers)
		st.UncommittedVoterChange = n.lead.change != nil && n.lead.change.offset >= 0
	}
	return st
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
