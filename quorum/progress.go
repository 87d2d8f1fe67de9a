// progress.go owns the leader's view of its replicas: each one's fetch
// position and timestamps, the high watermark those positions give, and
// the check-quorum bookkeeping (which voters fetched lately).

package quorum

import (
	"math"
	"slices"
)

// replicaState is the leader's view of one fetching replica.
type replicaState struct {
	id                 int32
	dir                [16]byte
	voter              bool
	endOffset          int64 // -1 until it fetched
	lastFetchMs        int64
	lastCaughtUpMs     int64
	lastFetchLeaderLEO int64
	// answeredHW is the high watermark last answered to its Fetch
	// (noAnsweredHW before the first): a Fetch below v18 does not say
	// which one its sender knows.
	answeredHW int64
}

const noAnsweredHW = math.MinInt64

// replicaKey names a replica by id and directory: under KIP-853 two
// directories of one node id are two replicas, and only the one the voter
// set names is the voter.
type replicaKey struct {
	id  int32
	dir [16]byte
}

// progressTracker is the leader's per-replica fetch state for one epoch. It
// holds the leader itself (self) among the voters while the voter set names
// it, and its end offset moves only as its own log becomes durable.
type progressTracker struct {
	self      int32
	selfVoter bool
	set       VoterSet // the voter set whose majority counts
	voters    []int32  // the set's ids, sorted
	// replicas are the voters by id; observers are every other fetcher by
	// key (an id of the set fetching from another directory is one).
	replicas  map[int32]*replicaState
	observers map[replicaKey]*replicaState
	selfState *replicaState

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

func newProgressTracker(self int32, selfDir [16]byte, set VoterSet, epochStart, selfEnd, now, checkQuorumMs int64) progressTracker {
	p := progressTracker{
		self:             self,
		replicas:         map[int32]*replicaState{},
		observers:        map[replicaKey]*replicaState{},
		selfState:        &replicaState{id: self, dir: selfDir, endOffset: selfEnd, lastFetchMs: -1, lastCaughtUpMs: -1},
		epochStartOffset: epochStart,
		hw:               -1,
		fetchedVoters:    map[int32]bool{},
		checkQuorumAt:    now + checkQuorumMs,
		checkQuorumMs:    checkQuorumMs,
		observerSweepAt:  now + observerSweepMs,
	}
	p.setVoters(set)
	return p
}

// setVoters makes set the one whose majority counts, as Apache's
// LeaderState.updateLocalState does when a VotersRecord is appended: a new
// voter keeps the progress it made as an observer, a removed one goes on
// as an observer.
func (p *progressTracker) setVoters(set VoterSet) {
	old := p.replicas
	p.set, p.voters, p.replicas = set, set.IDs(), map[int32]*replicaState{}
	for _, r := range old {
		if r != p.selfState {
			r.voter = false
			p.observers[replicaKey{r.id, r.dir}] = r
		}
	}
	p.selfVoter = set.Has(p.self, p.selfState.dir)
	p.selfState.voter = p.selfVoter
	for _, v := range set {
		if v.ID == p.self && p.selfVoter {
			p.replicas[v.ID] = p.selfState
			continue
		}
		r := p.takeObserver(v)
		if r == nil {
			r = &replicaState{id: v.ID, dir: v.DirectoryID, endOffset: -1, lastFetchMs: -1, lastCaughtUpMs: -1}
		}
		r.voter = true
		p.replicas[v.ID] = r
	}
	for id := range p.fetchedVoters {
		if p.replicas[id] == nil {
			delete(p.fetchedVoters, id)
		}
	}
}

// takeObserver removes and returns the observer that is voter v, if one
// has fetched.
func (p *progressTracker) takeObserver(v Voter) *replicaState {
	for k, r := range p.observers {
		if v.matches(k.id, k.dir) {
			delete(p.observers, k)
			return r
		}
	}
	return nil
}

// replica returns the state of the fetcher (id, dir), tracking a new
// observer if it is none known.
func (p *progressTracker) replica(id int32, dir [16]byte) *replicaState {
	if r := p.known(id, dir); r != nil {
		return r
	}
	r := &replicaState{id: id, dir: dir, endOffset: -1, lastFetchMs: -1, lastCaughtUpMs: -1, answeredHW: noAnsweredHW}
	p.observers[replicaKey{id, dir}] = r
	return r
}

// known is replica (id, dir)'s state if the leader tracks it, else nil.
func (p *progressTracker) known(id int32, dir [16]byte) *replicaState {
	if r := p.replicas[id]; r != nil && r != p.selfState {
		if v, _ := p.set.Get(id); v.matches(id, dir) {
			return r
		}
	}
	return p.observers[replicaKey{id, dir}]
}

// fetched records a valid fetch position of replica (id, dir) (never a
// diverging one, KAFKA-13141) and reports whether the replica is a voter.
func (p *progressTracker) fetched(id int32, dir [16]byte, fetchOffset, now int64) (voter bool) {
	r := p.replica(id, dir)
	if !r.voter {
		r.dir = dir
	} else if v, _ := p.set.Get(id); v.DirectoryID == [16]byte{} {
		r.dir = dir // a set without directory ids: show the one it fetches from
	}
	leaderLEO := p.selfState.endOffset
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
	for k, r := range p.observers {
		if r != p.selfState && now-r.lastFetchMs >= observerExpiryMs {
			delete(p.observers, k)
		}
	}
}

// selfDurable moves the leader's own end offset to leo, its log being
// durable below it; false if that is no progress.
func (p *progressTracker) selfDurable(leo, now int64) bool {
	self := p.selfState
	if leo <= self.endOffset {
		return false
	}
	self.endOffset = leo
	self.lastFetchMs, self.lastCaughtUpMs = now, now
	return true
}

// heardFrom pushes the check-quorum deadline back once a majority of the
// voters (the leader counts itself) fetched since it was last pushed;
// isVoter says the fetch came from the replica the set names. A leader that
// is a majority by itself pushes it on any replica's fetch, as Apache's
// does (LeaderState.updateCheckQuorumForFollowingVoter needs no fetcher
// then): otherwise the deadline it set when elected would be long past
// when a second voter is added, and it would resign at once.
func (p *progressTracker) heardFrom(voter int32, isVoter bool, now int64) {
	need := majority(len(p.voters))
	if p.selfVoter {
		need--
	}
	if need <= 0 {
		p.checkQuorumAt = now + p.checkQuorumMs
		return
	}
	if !isVoter || voter == p.self {
		return
	}
	p.fetchedVoters[voter] = true
	if len(p.fetchedVoters) >= need {
		clear(p.fetchedVoters)
		p.checkQuorumAt = now + p.checkQuorumMs
	}
}

// majorityFetchedAt is the time by which a majority of the voters had
// fetched, the leader counting itself at now: the majority-th most recent
// fetch. -1 when no majority ever fetched in this epoch.
func (p *progressTracker) majorityFetchedAt(now int64) int64 {
	var buf [8]int64
	times := buf[:0]
	for _, id := range p.voters {
		r := p.replicas[id]
		if r == p.selfState {
			times = append(times, now)
		} else {
			times = append(times, r.lastFetchMs)
		}
	}
	need := majority(len(times))
	if need == 0 || need > len(times) {
		return -1
	}
	slices.Sort(times)
	return times[len(times)-need]
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

// caughtUp reports whether the observer (id, dir) may become a voter: it
// has caught up with the leader at some point, and fetched within the last
// hour (Apache's LeaderState.isReplicaCaughtUp).
func (p *progressTracker) caughtUp(id int32, dir [16]byte, now int64) bool {
	r := p.observers[replicaKey{id, dir}]
	return r != nil && r.lastCaughtUpMs > 0 && r.lastFetchMs > 0 && r.lastFetchMs > now-caughtUpWindowMs
}
