package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/kraftd/kraftd/quorum"
)

// Silent failures (issue 33): a node that stops stepping but keeps its
// connections (a paused process; its messages queue until it resumes), a
// leader whose deferred fsync is slow or stalls, and clocks that jump. A
// seed also draws whether its nodes run kraftd's failure detector for
// silent leaders (kraftd.quorum.silence.timeout.ms, quorum/silence.go), and
// whether it is a healthy run: no crashes, partitions, drops or clock
// jumps, only pauses and slow fsyncs below the detector's bound, in which
// the first settled leader must lead to the end (no spurious election).

// The detector's settings the seeds run with: kraftd's defaults.
const (
	simSilenceMs      = 350
	simFetchMaxWaitMs = 25
)

// silentFaults are the knobs of silent failures, drawn after the others.
type silentFaults struct {
	// Silence runs the nodes with the failure detector for silent leaders.
	Silence bool
	// PauseProb is, per running node per step, the chance it pauses for
	// up to PauseMaxMs.
	PauseProb  float64
	PauseMaxMs int64
	// SlowSyncMaxMs: a leader's deferred fsync takes up to this long
	// (DeferSyncProb picks which do).
	SlowSyncMaxMs int64
	// ClockJumpProb is, per running node per step, the chance its clock
	// jumps forward (up to ClockJumpMaxMs) or back (its clock then stands
	// still until real time catches up, as a monotonic clock does).
	ClockJumpProb  float64
	ClockJumpMaxMs int64
	// Healthy: the spurious-election rule applies (drawSilentFaults).
	Healthy bool
}

// drawSilentFaults draws the silent-failure knobs, and for one seed in
// eight a healthy run: every fault that may cost a leader its quorum is
// off, and pauses and slow fsyncs stay well under the detector's bound (a
// leader answers a parked fetch within simFetchMaxWaitMs, the network adds
// at most 2 × 20 ms, the step 10 ms).
func drawSilentFaults(r *rand.Rand, f *Faults) {
	s := &f.Silent
	s.Silence = r.IntN(4) != 0
	s.PauseProb = r.Float64() * 0.002
	s.PauseMaxMs = 100 + r.Int64N(3000)
	s.SlowSyncMaxMs = r.Int64N(2000)
	s.ClockJumpProb = r.Float64() * 0.0005
	s.ClockJumpMaxMs = 100 + r.Int64N(4000)
	if r.IntN(8) != 0 {
		return
	}
	s.Healthy, s.Silence = true, true
	s.PauseMaxMs = 150
	s.SlowSyncMaxMs = 500
	s.ClockJumpProb = 0
	f.DropProb, f.PartitionMode, f.CrashProb, f.TornCrashProb = 0, PartitionNone, 0, 0
	f.DelayMaxMs = min(f.DelayMaxMs, f.DelayMinMs+15)
	f.OldPeer, f.ReconfigProb, f.ReformatProb, f.AutoJoin = -1, 0, 0, false
	f.UnreachableProb = 0
}

// healthy reports whether the run is a healthy one (drawSilentFaults)
// still, a test's Tweak having added no fault that may cost a leader its
// quorum.
func (f *Faults) healthy() bool {
	return f.Silent.Healthy && f.DropProb == 0 && f.PartitionMode == PartitionNone && f.CrashProb == 0 &&
		f.TornCrashProb == 0 && f.UnreachableProb == 0 && f.ReconfigProb == 0 && f.ReformatProb == 0 &&
		f.Silent.ClockJumpProb == 0
}

// running reports whether the node is up and not paused: only then does
// it step, tick, sync or take requests.
func (n *simNode) running() bool { return n.up && n.s.now >= n.pausedUntil }

// injectSilentFaults pauses nodes and jumps their clocks.
func (s *Sim) injectSilentFaults() {
	f := &s.faults.Silent
	for _, n := range s.nodes {
		if !n.running() {
			continue
		}
		if s.rand.Float64() < f.PauseProb {
			ms := 1 + s.rand.Int64N(f.PauseMaxMs)
			n.pausedUntil = s.now + ms
			s.stats.Pauses++
			s.event("n%d paused for %d ms", n.id, ms)
		}
		if s.rand.Float64() < f.ClockJumpProb {
			jump := 1 + s.rand.Int64N(f.ClockJumpMaxMs)
			if s.rand.IntN(2) == 0 {
				jump = -jump
			}
			n.clockSkew += jump
			s.stats.ClockJumps++
			s.event("n%d clock jumped %+d ms", n.id, jump)
		}
	}
}

// deliverLater keeps a message to a paused node on the wire until it
// resumes: its peers' connections stay open, and the kernel queues what
// they send.
func (s *Sim) deliverLater(n *simNode, m quorum.Message) {
	s.net.push(n.pausedUntil, m)
}

// syncDelay is how long a leader's deferred fsync takes.
func (s *Sim) syncDelay() int64 {
	d := s.opts.StepMs * int64(1+s.rand.IntN(4))
	if most := s.faults.Silent.SlowSyncMaxMs; most > 0 && s.rand.IntN(4) == 0 {
		d = 1 + s.rand.Int64N(most)
	}
	return d
}

// clockMs is the node's clock: the simulated time plus its skew, never
// going back.
func (n *simNode) clockMs() int64 {
	n.clockLast = max(n.clockLast, n.s.now+n.clockSkew)
	return n.clockLast
}

// checkSpurious is the spurious-election rule of a healthy run: once every
// voter follows one leader (settled), no node may reach a later epoch.
func (c *checker) checkSpurious(n *simNode, st quorum.Status) error {
	if !c.s.faults.healthy() {
		return nil
	}
	if c.settledEpoch == 0 {
		c.settledEpoch = c.settled()
		return nil
	}
	if st.Epoch > c.settledEpoch {
		return fmt.Errorf("spurious election in a healthy run: n%d is %s in epoch %d, after every voter followed the leader of epoch %d",
			n.id, st.Role, st.Epoch, c.settledEpoch)
	}
	return nil
}

// settled returns the epoch every voter follows one leader in, with a
// record of that epoch committed, or 0.
func (c *checker) settled() int32 {
	var epoch int32
	leader := int32(-1)
	for _, n := range c.s.nodes {
		if !n.voter {
			continue
		}
		if !n.up {
			return 0
		}
		st := n.node.Status()
		if (st.Role != quorum.RoleFollower && st.Role != quorum.RoleLeader) || st.LeaderID < 0 || (leader >= 0 && st.LeaderID != leader) || (epoch != 0 && st.Epoch != epoch) {
			return 0
		}
		if st.Role == quorum.RoleLeader && !st.EpochCommitted {
			return 0
		}
		leader, epoch = st.LeaderID, st.Epoch
	}
	return epoch
}

// silenceIf is v when on, else 0 (the core's Apache rules).
func silenceIf(on bool, v int64) int64 {
	if on {
		return v
	}
	return 0
}
