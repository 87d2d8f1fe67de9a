// step_follower.go owns Follower (a voter or an observer with a known
// leader): fetching from the leader, taking its records and high watermark,
// leader discovery by fetching from a random voter, and the backoff an
// EndQuorumEpoch asks for.

package quorum

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// stepFollower takes what a follower acts on past the common rules: its
// leader's EndQuorumEpoch, and its leader's Fetch and FetchSnapshot answers.
func stepFollower(n *Node, m Message, out outRequest) {
	switch body := messageBody(m).(type) {
	case *kmsg.EndQuorumEpochRequest:
		p := body.Topics[0].Partitions[0]
		if n.leaderID != p.LeaderID {
			return
		}
		candidates := p.PreferredSuccessors
		if body.Version >= 1 {
			candidates = nil
			for _, c := range p.PreferredCandidates {
				candidates = append(candidates, c.CandidateID)
			}
		}
		n.fetchDeadline = n.now + n.endEpochBackoff(candidates)
	case *kmsg.FetchResponse:
		n.takeFetch(m.From, body)
	case *kmsg.FetchSnapshotResponse:
		n.takeSnapshotChunk(m.From, body)
	case *kmsg.AddRaftVoterResponse:
		n.autoJoinAnswered(m.From, body.ErrorCode, errDuplicateVoter)
	case *kmsg.RemoveRaftVoterResponse:
		n.autoJoinAnswered(m.From, body.ErrorCode, errVoterNotFound)
	case *kmsg.UpdateRaftVoterResponse:
		if m.From == n.leaderID {
			// The leader took the listeners (or cannot take any): as
			// Apache, count it as hearing from the leader.
			n.leaderUpdated = true
			n.fetchDeadline = n.now + n.followerTimeout()
		}
	}
}

// tickFollower starts a pre-vote when an electable node has not heard from its
// leader within the fetch timeout. An observer then stops counting its
// leader as live, as a voter's pre-vote does: it grants pre-votes again.
// Under KIP-853 an observer may be a voter in the others' newer set, and
// refusing every pre-vote for a leader it lost (Apache's observers do,
// until they find a new one) can leave that set without a majority.
func tickFollower(n *Node) {
	n.maybeLeaderSilent()
	if n.now < n.fetchDeadline {
		return
	}
	if n.electable() {
		n.becomeProspective()
	} else {
		n.hasFetchedFromLeader = false
	}
}

// pollFollower fetches from the leader. An observer fetches from the best
// node it knows, as Apache 4.2+ does (KAFKA-19354): the leader, unless its
// fetch timeout passed and the leader is backed off after a failure; then a
// random bootstrap server, to find the leader again. Asking only the
// bootstrap servers once the timeout passed (Apache 4.1) kept an observer
// away from a leader it could reach again, answered by followers that name
// the leader but send no records.
func pollFollower(n *Node) {
	if n.isVoter {
		n.maybeSendUpdateVoter()
	} else {
		n.maybeAutoJoin()
	}
	if n.isVoter || n.now < n.fetchDeadline || n.canSend(n.leaderID, keyFetch) {
		n.maybeSendFetch(n.leaderID)
	} else {
		n.maybeSendBootstrapFetch()
	}
}

// grantAsFollower grants only pre-votes, and only once the leader has gone
// quiet (or its process is known gone, noteLeaderGone): a follower still
// hearing from its leader refuses, so a partitioned node cannot disrupt a
// healthy quorum.
func grantAsFollower(n *Node, v voteAsk) bool {
	return v.preVote && !n.hasFetchedFromLeader && v.upToDate
}

// goneStaggerMs spaces the early pre-votes of the followers of a leader
// whose process is gone, by their rank among the voters other than that
// leader. Every follower learns of the death within a millisecond or two
// (the kernel closes all the dead process's connections at once); were they
// all to pre-vote then, each would grant the other's pre-vote and both would
// stand in the same epoch, splitting the vote and costing an election
// timeout. The stagger must exceed a pre-vote round trip on the controllers'
// network, so that the follower ranked first has its grant before the next
// one stands; a LAN round trip is well under a millisecond.
const goneStaggerMs = 50

// goneEscalateMs is how long after a follower found its leader's process
// gone a voter's refusal of its pre-vote makes it stand in a standard
// election instead (stepNominee): longer than the staggers of five voters
// (150 ms) and a round trip, by which time every kraftd follower has found
// the death itself and granted, or stood.
const goneEscalateMs = 200

// noteLeaderGone takes a failed request whose connection the peer's host
// refused or closed (ErrPeerGone), and reports whether it should be retried
// at once, without backoff. For a follower's fetch to its leader, one such
// failure proves little (a healthy leader's connection may drop): the
// fetch is retried at once, on a new connection. A second in a row, with
// no answer between, means nothing listens where the leader was: its
// process is gone. The follower then stops counting the leader as live (it
// grants pre-votes again) and, if a voter, pre-votes after its stagger
// instead of at the fetch timeout. Only a follower that had fetched from
// the leader in this role takes this shortcut, once: after a lost pre-vote
// it is a new follower that has not fetched, so a leader that is alive but
// unreachable from one follower costs one refused pre-vote, not a stream.
// The pre-vote it starts asks a refusing voter again (reaskUntil): that
// voter may only not have seen its own fetch fail yet.
func (n *Node) noteLeaderGone(out outRequest) bool {
	if n.role != RoleFollower || out.to != n.leaderID || !n.sentInThisState(out) ||
		(out.key != keyFetch && out.key != keyFetchSnapshot) {
		return false
	}
	n.leaderGoneCount++
	if n.leaderGoneCount == 1 {
		return true
	}
	if n.leaderGoneCount == 2 && n.hasFetchedFromLeader {
		n.hasFetchedFromLeader = false
		n.fetchDeadline = min(n.fetchDeadline, n.now+n.goneStagger())
		tickFollower(n)
	}
	return false
}

// goneStagger is this follower's wait before its early pre-vote: its rank
// among the voters other than the gone leader, times goneStaggerMs. An
// observer does not vote; it falls back to asking the voters at once.
func (n *Node) goneStagger() int64 {
	if !n.isVoter {
		return 0
	}
	rank := int64(0)
	for _, v := range n.voters {
		if v == n.id {
			break
		}
		if v != n.leaderID {
			rank++
		}
	}
	return rank * goneStaggerMs
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

// takeFetch is a follower's step for a Fetch answer (past the common
// rules): truncate to a diverging epoch, start a snapshot download, or
// append the records and take the high watermark.
func (n *Node) takeFetch(from int32, resp *kmsg.FetchResponse) {
	p := &resp.Topics[0].Partitions[0]
	if from != n.leaderID || n.snap != nil {
		if n.bootstrapIndex(from) >= 0 {
			// A bootstrap server answered an observer that knows its
			// leader (records are taken from the leader by id only): ask
			// it again only after the backoff, so that an observer
			// waiting out its leader's backoff does not spin on them.
			n.backoff(from)
		}
		return
	}
	if p.DivergingEpoch.Epoch > n.epoch || p.SnapshotID.Epoch > n.epoch {
		// The leader of this epoch cannot know a later one: the log
		// would carry an epoch nobody was elected in (maxEpoch).
		n.backoff(from)
		return
	}
	switch {
	case p.DivergingEpoch.Epoch >= 0:
		if n.hw >= 0 && p.DivergingEpoch.EndOffset < n.hw {
			// Raft never asks this of a follower; a quorum recovered
			// without this node (kraftd recover) does, when this node
			// kept committing with other old voters meanwhile.
			n.fatal = fmt.Errorf("%w: node %d asked to truncate to %d, high watermark %d (leader %d, epoch %d); "+
				"if the quorum was recovered without this node, its records after that offset are not the quorum's: "+
				"wipe this directory and add the node back as a new voter", ErrTruncateBelowHighWatermark, n.id,
				p.DivergingEpoch.EndOffset, n.hw, n.leaderID, n.epoch)
			return
		}
		n.truncateToEndOffset(p.DivergingEpoch.EndOffset, p.DivergingEpoch.Epoch)
	case p.SnapshotID.Epoch >= 0 || p.SnapshotID.EndOffset >= 0:
		if p.SnapshotID.Epoch < 0 || p.SnapshotID.EndOffset < 0 {
			return
		}
		n.snap = &snapshotDownload{id: SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}}
	default:
		if !n.appendAsFollower(p.RecordBatches) {
			n.backoff(from)
			return
		}
		if p.HighWatermark >= 0 {
			n.updateFollowerHighWatermark(min(n.endOffset, p.HighWatermark))
		}
	}
	n.heardFromLeader(n.followerTimeout())
}

func (n *Node) updateFollowerHighWatermark(hw int64) {
	if hw > n.hw {
		n.hw = hw
	}
}

func (n *Node) maybeSendFetch(to int32) {
	if to < 0 || to == n.id || n.reqs.fetching != 0 || !n.logSettled() || !n.canSend(to, keyFetch) || !n.canSend(to, keyFetchSnapshot) {
		return
	}
	if n.snap != nil {
		n.reqs.fetching = n.send(to, n.buildFetchSnapshotRequest(to, n.snap.id, n.snap.pos), false)
	} else {
		n.reqs.fetching = n.send(to, n.buildFetchRequest(to), false)
	}
	if to == n.leaderID && n.role == RoleFollower && n.askTimeout != 0 {
		n.askMade = true // the wait starts when it leaves (Advance)
	}
}

// maybeSendBootstrapFetch asks a random bootstrap server (or voter), to
// discover the leader.
func (n *Node) maybeSendBootstrapFetch() {
	if n.reqs.fetching != 0 || !n.logSettled() {
		return
	}
	var ready []int32
	for _, v := range n.bootstrapPeers() {
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
