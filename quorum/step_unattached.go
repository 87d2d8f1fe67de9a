// step_unattached.go owns Unattached (no leader known, perhaps a vote cast)
// and Resigned (a leader stepping down, telling the voters with
// EndQuorumEpoch).

package quorum

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stepUnattached takes what Unattached and Resigned act on past the common
// rules: a Resigned leader counts the voters that acknowledged its
// EndQuorumEpoch (only Resigned sends it, so only Resigned sees answers).
func stepUnattached(n *Node, m Message, out outRequest) {
	if _, ok := m.Response.(*kmsg.EndQuorumEpochResponse); ok {
		delete(n.unacked, m.From)
	}
}

// tickUnattached starts a pre-vote when an electable node's election timer
// runs out.
func tickUnattached(n *Node) {
	if n.electable() && n.now >= n.electionDeadline {
		n.becomeProspective()
	}
}

// tickResigned moves a resigned leader to Unattached in the next epoch once
// its election timer runs out; a leader of the last epoch has no next one
// (canStand) and stays Resigned.
func tickResigned(n *Node) {
	if n.now >= n.electionDeadline && n.canStand() {
		n.becomeUnattached(n.epoch+1, -1)
	}
}

// pollUnattached asks a random voter, to discover the leader.
func pollUnattached(n *Node) { n.maybeSendBootstrapFetch() }

// pollResigned sends EndQuorumEpoch to the voters that have not
// acknowledged it yet.
func pollResigned(n *Node) { n.sendEndQuorum() }

// grantAsUnattached is the rule of a node that has not joined an election
// in its epoch: Unattached, and Prospective (a pre-vote bumps no epoch and
// casts no vote). A pre-vote goes to any up-to-date candidate; a real vote
// only to the one already voted for, or, with no vote cast and no leader
// known, to an up-to-date candidate. A new vote is recorded here and leaves
// in HardState before the answer does; the election timer restarts because
// the candidate is as likely as us to win.
func grantAsUnattached(n *Node, v voteAsk) bool {
	var granted bool
	switch {
	case v.preVote:
		granted = v.upToDate
	case n.votedID >= 0:
		granted = n.votedID == v.candidate && (n.votedDir == [16]byte{} || n.votedDir == v.dir)
	case n.leaderID >= 0:
		granted = false
	default:
		granted = v.upToDate
	}
	if granted && !v.preVote && n.votedID < 0 {
		n.votedID, n.votedDir = v.candidate, v.dir
		n.electionDeadline = n.randomElectionDeadline()
	}
	return granted
}

func (n *Node) sendEndQuorum() {
	for _, v := range n.voters {
		if n.unacked[v] && n.canSend(v, keyEndQuorum) {
			n.send(v, n.buildEndQuorumRequest(v, n.preferred), false)
		}
	}
}
