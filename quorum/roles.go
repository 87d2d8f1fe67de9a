// roles.go owns the role table (what each role does on a tick, a poll and
// a message past the common rules) and the becomeX transitions between roles.

package quorum

import (
	"slices"
)

// roleRules is what one role does differently from the others. The node
// looks its role's rules up on every input (rules), so the role field alone
// says what runs; etcd-io/raft swaps its step and tick functions in each
// becomeX to the same effect. Roles that behave alike share a function:
// stepNominee serves Prospective and Candidate, stepUnattached serves
// Unattached and Resigned.
type roleRules struct {
	// step takes what the common rules (epoch.go) pass on: a request only
	// this role acts on, or an answer to a request sent in this role and
	// epoch.
	step func(n *Node, m Message, out outRequest)
	// tick fires the role's timers.
	tick func(n *Node)
	// poll sends whatever the role owes its peers.
	poll func(n *Node)
	// grantVote decides a Vote request that passed the common checks (as
	// Apache's EpochState.canGrantVote); it may record the vote.
	grantVote func(n *Node, v voteAsk) bool
	// electionTimer says electionDeadline drives the role; moving from it
	// to Unattached keeps the running timer.
	electionTimer bool
}

var roleTable [RoleResigned + 1]roleRules

func init() {
	roleTable = [...]roleRules{
		RoleUnattached:  {step: stepUnattached, tick: tickUnattached, poll: pollUnattached, grantVote: grantAsUnattached, electionTimer: true},
		RoleProspective: {step: stepNominee, tick: tickProspective, poll: pollNominee, grantVote: grantAsUnattached, electionTimer: true},
		RoleCandidate:   {step: stepNominee, tick: tickCandidate, poll: pollNominee, grantVote: grantPreVoteOnly, electionTimer: true},
		RoleLeader:      {step: stepLeader, tick: tickLeader, poll: pollLeader, grantVote: grantNever},
		RoleFollower:    {step: stepFollower, tick: tickFollower, poll: pollFollower, grantVote: grantAsFollower},
		RoleResigned:    {step: stepUnattached, tick: tickResigned, poll: pollResigned, grantVote: grantPreVoteOnly, electionTimer: true},
	}
}

// rules are the current role's.
func (n *Node) rules() *roleRules { return &roleTable[n.role] }

// poll sends whatever the current role owes its peers.
func (n *Node) poll() {
	if n.fatal != nil {
		return
	}
	n.rules().poll(n)
}

// leaveRole drops per-role state before any transition.
func (n *Node) leaveRole() {
	if n.lead != nil {
		n.failVoterChange()
		n.failParkedFetches()
		n.lead = nil
		n.proposals = nil // a leader's unflushed proposals die with it
		n.reloadLogEndWithPending()
	}
	n.granted, n.rejected, n.reaskUntil, n.escalateAt = nil, nil, 0, 0
	n.unacked, n.preferred = nil, nil
	n.reqs.leaveRole()
	n.snap = nil
	n.hasFetchedFromLeader, n.leaderSilent, n.askTimeout, n.askMade = false, false, 0, false
	n.leaderGoneCount = 0
}

// becomeUnattached moves to epoch with no leader known (or leader known but
// unreachable). A vote is kept only within the same epoch.
func (n *Node) becomeUnattached(epoch int32, leader int32) {
	// A lost pre-vote restarts the timer: the node waits a full timeout
	// before it stands again.
	keepTimer := n.rules().electionTimer && !(n.role == RoleProspective && n.electionLost())
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

// canStand reports whether the node may stand for election: its candidacy
// takes epoch+1, which must not overflow. A node at math.MaxInt32 (only
// its own candidacy gets there, or quorum-state written by a version that
// took a forged epoch) stays where it is: there is no epoch left to elect
// a leader in, and an overflowed one would go negative.
func (n *Node) canStand() bool { return n.epoch < LastEpoch }

// becomeProspective starts a pre-vote (KIP-996): no epoch bump, nothing
// persisted.
func (n *Node) becomeProspective() {
	if !n.canStand() {
		return
	}
	leader := n.leaderID
	gone := n.role == RoleFollower && n.leaderGoneCount >= 2
	silent := n.role == RoleFollower && n.leaderSilent
	n.leaveRole()
	n.role, n.leaderID = RoleProspective, leader
	n.granted, n.rejected = map[int32]bool{n.id: true}, map[int32]bool{}
	n.electionDeadline = n.randomElectionDeadline()
	switch {
	case gone:
		n.reaskUntil = n.electionDeadline
		n.escalateAt = n.now + goneEscalateMs
	case silent:
		// The other followers' bounds end at most a MaxWaitMs and a
		// stagger after this one's; a voter that still refuses after one
		// more bound hears the leader, and is not asked again.
		n.reaskUntil = n.now + n.cfg.SilenceTimeoutMs
	}
	n.maybeWinElection()
}

// becomeCandidate bumps the epoch and votes for itself; the HardState with
// the vote leaves in the same Ready as, and is written before, the requests.
func (n *Node) becomeCandidate() {
	if !n.canStand() {
		return
	}
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
		progress:      newProgressTracker(n.id, n.cfg.DirectoryID, n.voterSet, n.endOffset, n.log.EndOffset(), n.now, n.checkQuorumMs()),
		granting:      granting,
		beginQuorumAt: n.now,
		lastAppendMs:  n.now,
		unsyncedSince: -1,
	}
	if n.control.kraftVersion() < 1 {
		// What a kraft.version upgrade would write: the static set with
		// this leader's own entry as it is, and every other voter's as its
		// UpdateRaftVoter gives it (kraftversion.go).
		n.lead.volatileVoters = n.voterSet.with(n.localVoter())
	}
	n.appendBatches(n.startOfEpochBatch(granting))
}

// becomeFollower follows leader in epoch; a vote is kept within the epoch.
func (n *Node) becomeFollower(epoch, leader int32) {
	if epoch != n.epoch {
		n.votedID, n.votedDir = -1, [16]byte{}
	}
	n.leaveRole()
	n.role, n.epoch, n.leaderID = RoleFollower, epoch, leader
	n.fetchDeadline = n.now + n.cfg.FetchTimeoutMs
	n.leaderContactMs = n.now
	n.updateVoterAt, n.leaderUpdated = n.now+n.updateVoterPeriod(), false
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
// QuorumState.randomElectionTimeoutMs. The silence bound does not shorten
// it: on a starved host a nominee's timer would then fire before its votes
// are answered, and elections would follow one another (seen in the soak).
func (n *Node) randomElectionDeadline() int64 {
	t := n.cfg.ElectionTimeoutMs
	return n.now + t + n.rand.Int64N(t)
}
