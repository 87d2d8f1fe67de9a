// silence.go owns the failure detector for leaders that go silent without
// closing their connections (a paused process, a partition, a stalled
// disk): with Config.SilenceTimeoutMs set, a voting follower takes a
// leader that has not answered its fetches for that long for failed,
// instead of waiting out the fetch timeout. The leader answers a parked
// Fetch within the MaxWaitMs the follower sent, so a live one is heard
// from every FetchMaxWaitMs even when idle; Apache leaders honour the
// follower's MaxWaitMs too, so the rule holds whoever leads. The leader's
// own check-quorum, and the bound on its own fsync, stay Apache's 1.5
// fetch timeouts.

package quorum

// silenceEnabled reports whether this node, following, uses the silence
// bound: only a voter that could stand, since only a voter's pre-vote
// replaces the leader (observers keep the fetch timeout).
func (n *Node) silenceEnabled() bool {
	return n.cfg.SilenceTimeoutMs > 0 && n.electable()
}

// followerTimeout is how long a follower that just heard from its leader
// waits before it stands: the fetch timeout, or with the silence bound, the
// bound plus its stagger among the voters (goneStagger). The stagger lets
// the first follower's pre-vote find the others already past their own
// bound, granting, rather than standing beside it and splitting the vote.
func (n *Node) followerTimeout() int64 {
	if n.silenceEnabled() {
		return n.cfg.SilenceTimeoutMs + n.goneStagger()
	}
	return n.cfg.FetchTimeoutMs
}

// heardFromLeader notes an answer from the leader: the follower counts
// it as live (and refuses pre-votes) for the silence bound, or the fetch
// timeout, and stands after timeout. With the silence bound, both run from
// the follower's next request (askedLeader), not from this answer: the
// time the follower itself takes before asking again (its own fsync, its
// own wait for a CPU) is not the leader's silence. Until it asks, the fetch
// timeout holds, as it would without the bound.
func (n *Node) heardFromLeader(timeout int64) {
	n.askTimeout = 0
	if n.silenceEnabled() {
		timeout, n.askTimeout = max(timeout, n.cfg.FetchTimeoutMs), timeout
	}
	n.fetchDeadline = n.now + timeout
	n.heardUntil = n.fetchDeadline
	n.hasFetchedFromLeader = true
	n.leaderContactMs = n.now
}

// askedLeader starts the leader's time to answer once the follower's next
// request after an answer has left (Advance, at the shell's SetTime): the
// silence bound for counting it live, and the follower's timeout for
// standing.
func (n *Node) askedLeader() {
	if n.askTimeout == 0 || n.role != RoleFollower {
		return
	}
	n.fetchDeadline = n.now + n.askTimeout
	n.heardUntil = n.now + min(n.askTimeout, n.cfg.SilenceTimeoutMs)
	n.askTimeout = 0
}

// maybeLeaderSilent stops counting the leader as live once heardUntil
// passes without an answer: from then on the follower grants pre-votes,
// and the pre-vote it starts itself asks a refusing voter again, as when
// the leader's process is gone (reaskUntil), since that voter's own
// bound may end a few milliseconds after this one's.
func (n *Node) maybeLeaderSilent() {
	if n.hasFetchedFromLeader && n.now >= n.heardUntil && n.silenceEnabled() {
		n.hasFetchedFromLeader = false
		n.leaderSilent = true
	}
}

// checkQuorumMs is how long a leader leads without fetches from a
// majority, and how long its own fsync may run, before it resigns:
// Apache's 1.5 fetch timeouts, whatever the silence bound. Failover does
// not wait for it: followers that hear nothing replace a silent leader
// after the silence bound. Resigning sooner would only turn a follower
// that is slow for a moment (its own fsync stalled for a second behind
// the machine's other writes, its fetch not sent meanwhile) into an
// election, the spurious kind the bound must not cause.
func (n *Node) checkQuorumMs() int64 {
	return n.cfg.FetchTimeoutMs * 3 / 2
}

// syncStalled reports that the leader's own fsync of records it shipped
// first has run for checkQuorumMs. Its followers may still commit without
// it, but the quorum then has no spare replica: the leader resigns
// (EndQuorumEpoch) so that one with a working disk leads. Only with the
// silence bound set: without it kraftd keeps Apache's rules, which have
// no such resignation.
func (n *Node) syncStalled() bool {
	return n.cfg.SilenceTimeoutMs > 0 && n.lead.unsyncedSince >= 0 && n.now-n.lead.unsyncedSince >= n.checkQuorumMs()
}
