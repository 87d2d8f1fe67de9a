// step_leader.go owns Leader: its timers (check-quorum, BeginQuorumEpoch
// resend, idle record), and the requests only a leader serves.

package quorum

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stepLeader serves the requests only a leader answers; the common rules
// (epoch.go) refused them everywhere else.
func stepLeader(n *Node, m Message, out outRequest) {
	switch req := m.Request.(type) {
	case *kmsg.FetchRequest:
		n.serveFetch(m, req)
	case *kmsg.FetchSnapshotRequest:
		n.serveFetchSnapshot(m, req)
	case *kmsg.DescribeQuorumRequest:
		n.respond(m, n.describeQuorum(req))
	case *kmsg.AddRaftVoterRequest:
		n.handleAddVoter(m, req)
	case *kmsg.RemoveRaftVoterRequest:
		n.handleRemoveVoter(m, req)
	case *kmsg.UpdateRaftVoterRequest:
		n.handleUpdateVoter(m, req)
	}
	if resp, ok := m.Response.(*kmsg.ApiVersionsResponse); ok {
		n.takeApiVersions(m.ReqID, resp)
	}
}

// tickLeader resigns when check-quorum fails, answers parked fetches whose
// wait is over, forgets observers that stopped fetching, and writes the
// idle record when the log has been idle.
func tickLeader(n *Node) {
	if n.lead.progress.quorumLost(n.now) || n.syncStalled() {
		// Check-quorum: no fetches from a majority for 1.5 fetch timeouts;
		// or the leader's own disk has stopped syncing for as long.
		n.becomeResigned(n.lead.progress.successors())
		return
	}
	n.expireParkedFetches()
	n.expireVoterChange()
	n.lead.progress.maybeForgetObservers(n.now)
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

// pollLeader resigns once the voter set that removed the leader has
// committed; else it resends BeginQuorumEpoch to every other voter each
// fetch timeout / 2 (at once when the epoch starts).
func pollLeader(n *Node) {
	if n.lead.resignRequested {
		n.becomeResigned(n.lead.progress.successors())
		return
	}
	n.sendBeginQuorum()
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

// grantNever: a leader grants no vote in its own epoch, not even a pre-vote.
func grantNever(*Node, voteAsk) bool { return false }
