package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/quorum"
)

// The node's lifecycle in the log: what start-up recovered, every role
// change with its reason, leadership won and lost, and the resignation of
// a graceful stop. The quorum core does not say why it changed role; the
// reasons below follow from which transition it made (each has few
// causes, listed where there are several), so the core stays as it is.

// logRecovered says what start-up found on disk and loaded.
func (n *Node) logRecovered(began time.Time, snapshot string) {
	st := n.core.Status()
	hs := n.disk.HardState
	n.log.Info().Str("snapshot", snapshot).
		Int64("log_start_offset", n.disk.Log.StartOffset()).Int64("log_end_offset", n.disk.Log.EndOffset()).
		Int32("log_end_epoch", n.disk.Log.LastEpoch()).
		Int32("quorum_state_epoch", hs.LeaderEpoch).Int32("quorum_state_leader", hs.LeaderID).Int32("quorum_state_voted", hs.VotedID).
		Int16("kraft_version", st.KRaftVersion).Ints32("voters", st.Voters.IDs()).Str("role", st.Role.String()).
		Dur("took_ms", n.env.Clock.Now().Sub(began)).
		Msg("recovered the metadata log")
}

// roleName is a role as an operator reads it: an observer is a follower
// that is not a voter.
func roleName(s quorum.SoftState) string {
	if s.Role == quorum.RoleFollower && !s.IsVoter {
		return "Observer"
	}
	return s.Role.String()
}

// transitionReason says why the core moved from prev to s.
func (n *Node) transitionReason(prev, s quorum.SoftState) string {
	switch s.Role {
	case quorum.RoleLeader:
		return fmt.Sprintf("won the election of epoch %d: a majority of the voters granted their votes", s.Epoch)
	case quorum.RoleCandidate:
		return fmt.Sprintf("a majority granted the pre-vote; standing for epoch %d", s.Epoch)
	case quorum.RoleProspective:
		switch prev.Role {
		case quorum.RoleFollower:
			return fmt.Sprintf("no answer from leader %d within kraftd.quorum.silence.timeout.ms (or controller.quorum.fetch.timeout.ms), or its process is gone; pre-voting", prev.LeaderID)
		case quorum.RoleCandidate:
			return fmt.Sprintf("the election of epoch %d timed out; pre-voting again", prev.Epoch)
		}
		return "election timeout with no leader known; pre-voting"
	case quorum.RoleResigned:
		if n.resigning {
			return "resigning to stop: EndQuorumEpoch to the other voters"
		}
		return "lost the quorum (no majority of voters fetched within 1.5 × controller.quorum.fetch.timeout.ms), its own fsync stalled for as long, or a committed voter set removed this leader"
	case quorum.RoleFollower:
		switch {
		case s.Epoch > prev.Epoch:
			return fmt.Sprintf("leader %d announced epoch %d", s.LeaderID, s.Epoch)
		case prev.Role == quorum.RoleProspective:
			return fmt.Sprintf("the pre-vote did not win; leader %d of epoch %d is still known", s.LeaderID, s.Epoch)
		}
		return fmt.Sprintf("learned leader %d of epoch %d", s.LeaderID, s.Epoch)
	case quorum.RoleUnattached:
		switch {
		case prev.Role == quorum.RoleResigned:
			return fmt.Sprintf("the resignation's election timeout ran out; epoch %d begins", s.Epoch)
		case s.Epoch > prev.Epoch:
			return fmt.Sprintf("a vote request or answer carried epoch %d, newer than %d", s.Epoch, prev.Epoch)
		}
		return "the pre-vote did not win and no leader is known"
	}
	return ""
}

// logTransition writes one line per role, epoch or leader change, and the
// leadership won or lost.
func (n *Node) logTransition(prev, s quorum.SoftState) {
	now := n.env.Clock.Now()
	if prev.Role != s.Role || prev.Epoch != s.Epoch || prev.LeaderID != s.LeaderID || prev.IsVoter != s.IsVoter {
		n.log.Info().Str("role", roleName(s)).Str("from", roleName(prev)).Int32("epoch", s.Epoch).Int32("leader", s.LeaderID).
			Str("reason", n.transitionReason(prev, s)).Msg("quorum state")
	}
	if prev.IsVoter && !s.IsVoter {
		// Removed, or fenced out by a recovery (kraftd recover): the
		// operator must hear why this node no longer stands.
		n.log.Warn().Int32("epoch", s.Epoch).Int32("leader", s.LeaderID).
			Msg("not a voter any more: the voter set in the log does not name this node (its node.id with its directory.id): " +
				"it was removed, or the quorum was recovered without it (kraftd recover). It follows as an observer and never " +
				"stands for election; add it back as a new voter (add-controller) or stop it")
	}
	wasLeader, isLeader := prev.Role == quorum.RoleLeader, s.Role == quorum.RoleLeader
	switch {
	case isLeader && (!wasLeader || prev.Epoch != s.Epoch):
		n.leaderSince = now
		e := n.log.Info().Int32("epoch", s.Epoch)
		if !n.electionStart.IsZero() {
			e = e.Dur("election_took_ms", now.Sub(n.electionStart))
		}
		e.Msg("won leadership")
	case wasLeader && (!isLeader || prev.Epoch != s.Epoch):
		n.log.Info().Int32("epoch", prev.Epoch).Dur("led_for_ms", now.Sub(n.leaderSince)).Str("reason", n.transitionReason(prev, s)).
			Msg("lost leadership")
	}
	if isLeader && s.EpochCommitted && !prev.EpochCommitted {
		n.log.Info().Int32("epoch", s.Epoch).Dur("since_won_ms", now.Sub(n.leaderSince)).
			Msg("active controller: the epoch's first record committed")
	}
}

// noteEndQuorum keeps whom EndQuorumEpoch went to and the successors it
// named, for the log line of a graceful stop.
func (n *Node) noteEndQuorum(to int32, req *kmsg.EndQuorumEpochRequest) {
	if !slices.Contains(n.endQuorumTo, to) {
		n.endQuorumTo = append(n.endQuorumTo, to)
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			n.successors = n.successors[:0]
			n.successors = append(n.successors, p.PreferredSuccessors...)
			for _, c := range p.PreferredCandidates {
				if !slices.Contains(n.successors, c.CandidateID) {
					n.successors = append(n.successors, c.CandidateID)
				}
			}
		}
	}
}
