// progress.go owns the leader's view of its replicas: each one's fetch
// position and timestamps, the high watermark those positions give, and
// the check-quorum bookkeeping (which voters fetched lately).

package quorum

import "slices"

// replicaState is the leader's view of one fetching replica.
type replicaState struct {
	id                 int32
	dir                [16]byte
	voter              bool
	endOffset          int64 // -1 until it fetched
	lastFetchMs        int64
	lastCaughtUpMs     int64
	lastFetchLeaderLEO int64
}

// progressTracker is the leader's per-replica fetch state for one epoch. It
// holds the leader itself among the voters, whose end offset moves only as
// its own log becomes durable.
type progressTracker struct {
	self      int32
	selfVoter bool
	voters    []int32 // sorted; the node's voter set
	replicas  map[int32]*replicaState

	// epochStartOffset is the leader's log end when the epoch began; the
	// high watermark moves only once a majority holds more than it.
	epochStartOffset int64
	hw               int64 // -1 until a record of this epoch is committed

	// fetchedVoters are the voters that fetched since checkQuorumAt was
	// last pushed back; the leader resigns at checkQuorumAt.
	fetchedVoters map[int32]bool
	checkQuorumAt int64
	checkQuorumMs int64

	// observerSweepAt is when the leader next forgets idle observers.
	observerSweepAt int64
}

// observerExpiryMs is how long the leader remembers an observer that
// stopped fetching: Apache's LeaderState.OBSERVER_SESSION_TIMEOUT_MS, 5
// minutes after its last fetch. Any replica id may fetch, so without it
// every id ever seen (forged ones too) would stay for the whole epoch.
const observerExpiryMs = 5 * 60 * 1000

// observerSweepMs is how often the leader looks for idle observers. Apache
// looks only when it answers DescribeQuorum, so its memory grows until
// someone asks; one pass every 10 s costs little even over many observers,
// and DescribeQuorum sweeps as well, so what it lists is exact.
const observerSweepMs = 10 * 1000

func newProgressTracker(self int32, selfVoter bool, voters []int32, epochStart, selfEnd, now, checkQuorumMs int64) progressTracker {
	p := progressTracker{
		self: self, selfVoter: selfVoter, voters: voters,
		replicas:         map[int32]*replicaState{},
		epochStartOffset: epochStart,
		hw:               -1,
		fetchedVoters:    map[int32]bool{},
		checkQuorumAt:    now + checkQuorumMs,
		checkQuorumMs:    checkQuorumMs,
		observerSweepAt:  now + observerSweepMs,
	}
	for _, v := range voters {
		p.replicas[v] = &replicaState{id: v, voter: true, endOffset: -1, lastFetchMs: -1, lastCaughtUpMs: -1}
	}
	p.replicas[self].endOffset = selfEnd
	return p
}

// fetched records a valid fetch position of replica id (never a diverging
// one, KAFKA-13141) and reports whether the replica is a voter.
func (p *progressTracker) fetched(id int32, dir [16]byte, fetchOffset, now int64) (voter bool) {
	r := p.replicas[id]
	if r == nil {
		r = &replicaState{id: id, endOffset: -1, lastFetchMs: -1, lastCaughtUpMs: -1}
		p.replicas[id] = r
	}
	r.dir = dir
	leaderLEO := p.replicas[p.self].endOffset
	// Caught-up time as in Apache's ReplicaState.updateFollowerState.
	if fetchOffset >= leaderLEO {
		r.lastCaughtUpMs = max(r.lastCaughtUpMs, now)
	} else if r.lastFetchLeaderLEO > 0 && fetchOffset >= r.lastFetchLeaderLEO {
		r.lastCaughtUpMs = max(r.lastCaughtUpMs, r.lastFetchMs)
	}
	r.lastFetchLeaderLEO = leaderLEO
	r.lastFetchMs = now
	r.endOffset = fetchOffset
	return r.voter
}

// maybeForgetObservers runs forgetObservers once every observerSweepMs.
func (p *progressTracker) maybeForgetObservers(now int64) {
	if now >= p.observerSweepAt {
		p.forgetObservers(now)
		p.observerSweepAt = now + observerSweepMs
	}
}

// forgetObservers drops the observers that have not fetched for
// observerExpiryMs, as Apache's LeaderState.clearInactiveObservers does.
// Voters stay, fetching or not: the high watermark and check-quorum count
// them. An observer that fetches again is tracked again from that fetch.
func (p *progressTracker) forgetObservers(now int64) {
	for id, r := range p.replicas {
		if !r.voter && id != p.self && now-r.lastFetchMs >= observerExpiryMs {
			delete(p.replicas, id)
		}
	}
}

// selfDurable moves the leader's own end offset to leo, its log being
// durable below it; false if that is no progress.
func (p *progressTracker) selfDurable(leo, now int64) bool {
	self := p.replicas[p.self]
	if leo <= self.endOffset {
		return false
	}
	self.endOffset = leo
	self.lastFetchMs, self.lastCaughtUpMs = now, now
	return true
}

// heardFrom pushes the check-quorum deadline back once a majority of the
// voters (the leader counts itself) fetched since it was last pushed.
func (p *progressTracker) heardFrom(voter int32, now int64) {
	if !slices.Contains(p.voters, voter) {
		return
	}
	p.fetchedVoters[voter] = true
	need := majority(len(p.voters))
	if p.selfVoter {
		need--
	}
	if len(p.fetchedVoters) >= need {
		clear(p.fetchedVoters)
		p.checkQuorumAt = now + p.checkQuorumMs
	}
}

// quorumLost reports that no majority of voters fetched within the
// check-quorum timeout (a single voter never loses its quorum).
func (p *progressTracker) quorumLost(now int64) bool {
	return len(p.voters) > 1 && now >= p.checkQuorumAt
}

// advanceHighWatermark moves hw to the largest offset a majority of voters
// hold, but only once that offset is past the start of the epoch, and never
// backwards. It reports whether hw moved.
func (p *progressTracker) advanceHighWatermark() bool {
	offsets := make([]int64, 0, len(p.voters))
	for _, v := range p.voters {
		offsets = append(offsets, p.replicas[v].endOffset)
	}
	candidate := majorityOffset(offsets)
	if candidate <= p.epochStartOffset || candidate <= p.hw {
		return false
	}
	p.hw = candidate
	return true
}

// successors lists the other voters, furthest fetched first (ties keep
// voter id order): the order EndQuorumEpoch names them in.
func (p *progressTracker) successors() []int32 {
	var out []int32
	for _, v := range p.voters {
		if v != p.self {
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b int32) int {
		ea, eb := p.replicas[a].endOffset, p.replicas[b].endOffset
		switch {
		case ea > eb:
			return -1
		case ea < eb:
			return 1
		}
		return 0
	})
	return out
}
