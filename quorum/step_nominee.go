// step_nominee.go owns Prospective (pre-vote) and Candidate: asking for
// votes, counting the answers, and winning or losing the election.

package quorum

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// electionLost reports that enough voters rejected the nominee that no
// majority can grant it any more.
func (n *Node) electionLost() bool {
	return n.rejected != nil && len(n.rejected) > len(n.voters)-majority(len(n.voters))
}

// maybeWinElection moves a nominee forward once a majority granted.
func (n *Node) maybeWinElection() {
	count := 0
	for id, ok := range n.granted {
		// Only members of the newest set count: a removed voter standing
		// (electable) granted itself, but is not one.
		if _, member := slices.BinarySearch(n.voters, id); ok && member && (id != n.id || n.isVoter) {
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

// stepNominee takes the answers to this election's Vote requests (the
// common rules pass on only those sent in this role and epoch).
func stepNominee(n *Node, m Message, out outRequest) {
	resp, ok := m.Response.(*kmsg.VoteResponse)
	if !ok {
		return
	}
	if resp.Topics[0].Partitions[0].VoteGranted {
		n.granted[m.From] = true
		delete(n.rejected, m.From)
		n.maybeWinElection()
		return
	}
	n.rejected[m.From] = true
	if m.From == n.leaderID {
		n.escalateAt = 0 // the leader answered: it lives
	}
	if n.role == RoleProspective && n.escalateAt > 0 && n.now >= n.escalateAt {
		// The leader's process is gone, and this voter still refuses
		// after every kraftd follower would have found that out and
		// granted or stood itself: it keeps its dead leader until its own
		// fetch timeout (an Apache voter does). A pre-vote cannot move
		// it, a standard Vote can: an Apache voter without pre-vote sends
		// one too, and it disturbs no live leader.
		n.becomeCandidate()
		return
	}
	if n.role == RoleProspective && n.electionLost() {
		n.prospectiveLost()
		return
	}
	if n.reasking() {
		// The leader's process is gone (or the leader silent), but the
		// voter that refused may not have found out yet: its parked fetch
		// fails (or its bound ends) a moment later than ours. A pre-vote changes nothing on its receiver, so ask
		// again after the retry backoff rather than sit out the election
		// timeout with a majority that will not come. The backoff is
		// shorter than goneStaggerMs, so the ask lands while that voter
		// waits its stagger and grants, before it stands itself.
		n.backoff(m.From)
	}
	// A rejected Candidate waits out its election timeout, then pre-votes.
}

// reasking reports whether a voter that refused this pre-vote is asked
// again (reaskUntil).
func (n *Node) reasking() bool { return n.role == RoleProspective && n.now < n.reaskUntil }

// tickProspective ends a pre-vote that got no majority in time.
func tickProspective(n *Node) {
	if n.now >= n.electionDeadline {
		n.prospectiveLost()
	}
}

// tickCandidate: an election that got no majority in time goes back to a
// pre-vote before the next epoch is tried.
func tickCandidate(n *Node) {
	if n.now >= n.electionDeadline {
		n.becomeProspective()
	}
}

// pollNominee asks every voter that has not answered yet.
func pollNominee(n *Node) { n.sendVotes() }

// grantPreVoteOnly is a Candidate's and a Resigned leader's rule: each
// stood for the epoch itself, so it grants only pre-votes (for the next
// epoch), to an up-to-date candidate.
func grantPreVoteOnly(n *Node, v voteAsk) bool { return v.preVote && v.upToDate }

// sendVotes sends the election's Vote (or pre-vote) requests once the log
// end they carry is settled.
func (n *Node) sendVotes() {
	if !n.logSettled() {
		return
	}
	preVote := n.role == RoleProspective
	for _, v := range n.voters {
		if v == n.id || n.granted[v] || (n.rejected[v] && !n.reasking()) || !n.canSend(v, keyVote) {
			continue
		}
		if preVote && n.version(v, keyVote) < 2 {
			// The peer cannot carry PreVote: as Apache maps this to
			// UNSUPPORTED_VERSION, go straight to a standard election.
			n.becomeCandidate()
			if n.role == RoleCandidate {
				n.sendVotes()
			}
			return
		}
		n.send(v, n.buildVoteRequest(v, preVote), preVote)
	}
}
