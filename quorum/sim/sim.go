// Package sim is a deterministic simulator for package quorum in the style
// of TigerBeetle's VOPR: one goroutine runs 1-5 voters and some observers
// from one seed, over a simulated network (delay, reorder, drop, duplicate,
// partitions) and simulated disks (a crash keeps only what was synced, and
// a crash in the middle of a Ready may keep part of the unsynced tail).
// Fault knobs are drawn per seed (swarm testing). Every message goes through
// kmsg's AppendTo/ReadFrom on the way, and invariants are checked after
// every step.
package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/quorum/memlog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partition modes.
const (
	PartitionNone = iota
	PartitionIsolateOne
	PartitionRandomSplit
)

// Faults are the knobs drawn for one seed.
type Faults struct {
	Voters, Observers int
	DropProb          float64
	DuplicateProb     float64
	DelayMinMs        int64
	DelayMaxMs        int64
	PartitionMode     int
	Asymmetric        bool
	PartitionProb     float64 // per step, when not partitioned
	HealProb          float64 // per step, when partitioned
	CrashProb         float64 // per node per step
	TornCrashProb     float64 // per Ready: crash before it is fully synced
	RestartProb       float64 // per down node per step
	SnapshotProb      float64 // per node per step
	ProposeProb       float64 // per step
	UnreachableProb   float64 // a lost request is reported back as unreachable
	OldPeer           int32   // a voter that only speaks Vote v1 / Fetch v16, or -1
}

// Options configure one run.
type Options struct {
	Seed uint64
	// SafetySteps of StepMs each run with faults; then faults stop, the
	// network heals, every node restarts, and the quorum must elect a leader
	// and advance the high watermark within LivenessSteps.
	SafetySteps   int
	LivenessSteps int
	StepMs        int64
	// ForgetVoteOnRestart is a deliberately broken rule for testing the
	// checker: a restarted node loses the vote in its quorum-state.
	ForgetVoteOnRestart bool
	// Tweak, when set, adjusts the drawn fault profile.
	Tweak func(*Faults)
}

// DrawFaults picks the fault profile of a seed.
func DrawFaults(r *rand.Rand) Faults {
	f := Faults{
		Voters:          1 + r.IntN(5),
		Observers:       r.IntN(3),
		DropProb:        r.Float64() * 0.15,
		DuplicateProb:   r.Float64() * 0.05,
		DelayMinMs:      1 + r.Int64N(5),
		PartitionMode:   r.IntN(3),
		Asymmetric:      r.IntN(3) == 0,
		PartitionProb:   r.Float64() * 0.004,
		HealProb:        0.002 + r.Float64()*0.01,
		CrashProb:       r.Float64() * 0.0008,
		TornCrashProb:   r.Float64() * 0.003,
		RestartProb:     0.005 + r.Float64()*0.02,
		SnapshotProb:    r.Float64() * 0.003,
		ProposeProb:     0.05 + r.Float64()*0.3,
		UnreachableProb: r.Float64(),
		OldPeer:         -1,
	}
	f.DelayMaxMs = f.DelayMinMs + r.Int64N(60)
	if r.IntN(4) == 0 {
		f.OldPeer = 1 + r.Int32N(int32(f.Voters))
	}
	return f
}

type simNode struct {
	id     int32
	voter  bool
	node   *quorum.Node
	log    *memlog.Log
	hs     quorum.HardState // durable quorum-state
	up     bool
	incarn uint64
	lastHW int64 // in this incarnation
	chains []uint64
	base   uint64 // chain value below the first batch (snapshot)
	role   quorum.Role
	epoch  int32
	// deferred are leader fsyncs the shell put off (AdvanceWritten): when
	// due, the log is synced and each is reported with LeaderSynced.
	deferred []deferredSync
}

type deferredSync struct {
	epoch int32
	end   int64
	due   int64
}

// Sim is one simulation run.
type Sim struct {
	opts   Options
	faults Faults
	rand   *rand.Rand
	net    *network
	nodes  []*simNode
	byID   map[int32]*simNode
	voters map[int32][]quorum.Endpoint
	ids    []int32
	now    int64
	check  *checker
	trace  []string
	record int
	parted bool
}

// Run runs one seed and returns the first invariant violation, with the
// tail of the event trace.
func Run(opts Options) error {
	s := newSim(opts)
	err := s.run()
	if err != nil {
		return fmt.Errorf("%v\nfaults: %+v\nlast events:\n  %s", err, s.faults, strings.Join(s.trace, "\n  "))
	}
	return nil
}

func newSim(opts Options) *Sim {
	if opts.StepMs <= 0 {
		opts.StepMs = 10
	}
	r := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	s := &Sim{opts: opts, rand: r, byID: map[int32]*simNode{}, voters: map[int32][]quorum.Endpoint{}}
	s.faults = DrawFaults(r)
	if opts.Tweak != nil {
		opts.Tweak(&s.faults)
	}
	s.net = newNetwork(rand.New(rand.NewPCG(opts.Seed, 1)), &s.faults)
	s.check = newChecker(s)
	for i := 1; i <= s.faults.Voters; i++ {
		s.voters[int32(i)] = []quorum.Endpoint{{Name: "CONTROLLER", Host: "sim", Port: uint16(9000 + i)}}
	}
	add := func(id int32, voter bool) {
		n := &simNode{id: id, voter: voter, log: &memlog.Log{}, hs: quorum.HardState{LeaderID: -1, VotedID: -1}}
		s.nodes = append(s.nodes, n)
		s.byID[id] = n
		s.ids = append(s.ids, id)
		s.start(n)
	}
	for i := 1; i <= s.faults.Voters; i++ {
		add(int32(i), true)
	}
	for i := 1; i <= s.faults.Observers; i++ {
		add(int32(100+i), false)
	}
	return s
}

func (s *Sim) event(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf("t=%d ", s.now)+fmt.Sprintf(format, args...))
	if len(s.trace) > 60 {
		s.trace = s.trace[1:]
	}
}

func (s *Sim) peerVersions(self int32) func(int32, int16) int16 {
	old := s.faults.OldPeer
	return func(peer int32, key int16) int16 {
		if peer != old && self != old {
			return -1
		}
		switch key {
		case 52: // Vote without PreVote
			return 1
		case 1:
			return 16
		case 53, 54, 59:
			return 0
		}
		return -1
	}
}

func (s *Sim) start(n *simNode) {
	n.incarn++
	hs := n.hs
	if s.opts.ForgetVoteOnRestart && n.incarn > 1 {
		hs.VotedID, hs.VotedDirectoryID = -1, [16]byte{}
	}
	cfg := quorum.Config{
		NodeID:           n.id,
		ClusterID:        "sim",
		Voters:           s.voters,
		Endpoints:        s.voters[n.id],
		Rand:             rand.New(rand.NewPCG(s.opts.Seed, uint64(n.id)<<32|n.incarn)),
		HardState:        hs,
		Log:              n.log,
		RequestTimeoutMs: 800,
		IdleRecord:       func() []byte { return []byte("noop") },
		PeerVersions:     s.peerVersions(n.id),
	}
	node, err := quorum.New(cfg)
	if err != nil {
		panic(err)
	}
	node.Tick(s.now)
	n.node, n.up, n.lastHW = node, true, -1
	st := node.Status()
	n.role, n.epoch = st.Role, st.Epoch
	s.check.resyncChains(n)
}

func (s *Sim) crash(n *simNode, tornRand *rand.Rand) {
	n.up = false
	n.deferred = nil
	n.log.Crash(tornRand)
	s.check.resyncChains(n)
	s.event("n%d crashed (log end %d)", n.id, n.log.EndOffset())
}

func (s *Sim) run() error {
	total := s.opts.SafetySteps + s.opts.LivenessSteps
	for step := 0; step < total; step++ {
		s.now += s.opts.StepMs
		if step == s.opts.SafetySteps {
			s.beginLiveness()
		}
		if step < s.opts.SafetySteps {
			s.injectFaults()
		}
		if err := s.step(step < s.opts.SafetySteps); err != nil {
			return err
		}
		if step >= s.opts.SafetySteps && s.check.livenessMet() {
			return s.check.final()
		}
	}
	return fmt.Errorf("liveness: no leader advanced the high watermark past %d within %d ms after healing (max committed %d)",
		s.check.livenessFrom, int64(s.opts.LivenessSteps)*s.opts.StepMs, s.check.maxHW)
}

func (s *Sim) beginLiveness() {
	s.net.heal()
	s.faults.DropProb, s.faults.DuplicateProb = 0, 0
	for _, n := range s.nodes {
		if !n.up {
			s.start(n)
			s.event("n%d restarted for liveness", n.id)
		}
	}
	s.check.livenessFrom = s.check.maxHW
	s.event("healed; liveness phase from hw %d", s.check.maxHW)
}

func (s *Sim) injectFaults() {
	f := &s.faults
	if f.PartitionMode != PartitionNone {
		if !s.parted && s.rand.Float64() < f.PartitionProb {
			s.parted = true
			var voters []int32
			for id := range s.voters {
				voters = append(voters, id)
			}
			slices.Sort(voters)
			s.event("partition %s", s.net.partition(s.ids, voters))
		} else if s.parted && s.rand.Float64() < f.HealProb {
			s.parted = false
			s.net.heal()
			s.event("heal")
		}
	}
	for _, n := range s.nodes {
		switch {
		case n.up && s.rand.Float64() < f.CrashProb:
			s.crash(n, nil)
		case !n.up && s.rand.Float64() < f.RestartProb:
			s.start(n)
			s.event("n%d restarted as %s epoch=%d", n.id, n.role, n.epoch)
		}
	}
}

func (s *Sim) step(faulty bool) error {
	for _, m := range s.net.due(s.now) {
		to := s.byID[m.To]
		if to == nil || !to.up {
			s.maybeReportUnreachable(m)
			continue
		}
		m = roundTrip(m)
		if err := to.node.Step(m); err != nil {
			return fmt.Errorf("n%d: %w", to.id, err)
		}
	}
	for _, n := range s.nodes {
		if n.up {
			n.node.Tick(s.now)
		}
	}
	if faulty || true {
		s.workload()
	}
	for _, n := range s.nodes {
		if n.up {
			s.reportDeferredSyncs(n)
		}
	}
	for _, n := range s.nodes {
		if !n.up || !n.node.HasReady() {
			continue
		}
		if err := s.handleReady(n, faulty); err != nil {
			return err
		}
	}
	return s.check.afterStep()
}

func (s *Sim) workload() {
	for _, n := range s.nodes {
		if !n.up {
			continue
		}
		if n.role == quorum.RoleLeader && s.rand.Float64() < s.faults.ProposeProb {
			k := 1 + s.rand.IntN(3)
			var recs [][]byte
			for i := 0; i < k; i++ {
				s.record++
				recs = append(recs, []byte(fmt.Sprintf("r%d", s.record)))
			}
			_, _, _ = n.node.Propose(recs)
		}
		if s.rand.Float64() < s.faults.SnapshotProb {
			hw := n.node.Status().HighWatermark
			if hw > n.log.StartOffset() && n.log.TakeSnapshot(hw) == nil {
				s.check.compacted(n)
				s.event("n%d snapshot at %d", n.id, hw)
			}
		}
	}
}

// handleReady is the shell's Ready loop: persist, send (first, when the
// Ready allows it, as the real shell does), then Advance. A torn crash
// stops it after the writes and before the fsync.
func (s *Sim) handleReady(n *simNode, faulty bool) error {
	rd := n.node.Ready()
	// Half the leader fsyncs that may wait are put off for a few steps,
	// during which the node takes fetches and may crash.
	deferSync := rd.SendFirst && rd.MustSync && s.rand.IntN(2) == 0
	if !deferSync && (rd.HardState != nil || rd.SnapshotWrite != nil || rd.Truncate != nil || rd.MustSync) {
		n.log.Sync() // finish the deferred fsyncs first; their reports follow
		for i := range n.deferred {
			n.deferred[i].due = s.now
		}
	}
	if rd.SendFirst {
		s.sendAll(rd.Messages)
	}
	torn := faulty && s.rand.Float64() < s.faults.TornCrashProb
	if torn && s.rand.IntN(3) == 0 {
		s.crash(n, nil) // before anything reached the disk
		return nil
	}
	if rd.HardState != nil {
		if err := s.check.hardState(n, *rd.HardState); err != nil {
			return err
		}
		n.hs = *rd.HardState
	}
	if rd.SnapshotWrite != nil {
		if err := n.log.WriteSnapshot(*rd.SnapshotWrite); err != nil {
			return fmt.Errorf("n%d: %w", n.id, err)
		}
		if rd.SnapshotWrite.Done {
			if err := s.check.installed(n, rd.SnapshotWrite.ID); err != nil {
				return err
			}
			s.event("n%d installed snapshot %d@%d", n.id, rd.SnapshotWrite.ID.EndOffset, rd.SnapshotWrite.ID.Epoch)
		}
	}
	if rd.Truncate != nil {
		if err := s.check.truncating(n, *rd.Truncate); err != nil {
			return err
		}
		n.log.TruncateTo(*rd.Truncate)
		s.check.resyncChains(n)
		s.event("n%d truncated to %d", n.id, *rd.Truncate)
	}
	if len(rd.Append) > 0 {
		before := len(n.log.Batches())
		if err := n.log.Append(rd.Append); err != nil {
			return fmt.Errorf("n%d: %w", n.id, err)
		}
		if err := s.check.appended(n, before); err != nil {
			return err
		}
	}
	if torn {
		s.crash(n, s.rand) // written but not synced: keep a random prefix
		return nil
	}
	if rd.MustSync && !deferSync {
		n.log.Sync()
	}
	if !rd.SendFirst {
		s.sendAll(rd.Messages)
	}
	if rd.SoftState.Role != n.role || rd.SoftState.Epoch != n.epoch {
		s.event("n%d %s epoch=%d leader=%d", n.id, rd.SoftState.Role, rd.SoftState.Epoch, rd.SoftState.LeaderID)
	}
	if err := s.check.softState(n, rd.SoftState, rd.HighWatermark); err != nil {
		return err
	}
	n.role, n.epoch = rd.SoftState.Role, rd.SoftState.Epoch
	if deferSync {
		n.deferred = append(n.deferred, deferredSync{epoch: rd.SoftState.Epoch, end: n.log.EndOffset(), due: s.now + s.opts.StepMs*int64(1+s.rand.IntN(4))})
		n.node.AdvanceWritten()
		return nil
	}
	n.node.Advance()
	return nil
}

// reportDeferredSyncs completes the deferred fsyncs that are due.
func (s *Sim) reportDeferredSyncs(n *simNode) {
	if len(n.deferred) == 0 || n.deferred[0].due > s.now {
		return
	}
	n.log.Sync()
	for len(n.deferred) > 0 && n.deferred[0].due <= s.now {
		d := n.deferred[0]
		n.deferred = n.deferred[1:]
		n.node.LeaderSynced(d.epoch, d.end)
	}
}

func (s *Sim) sendAll(msgs []quorum.Message) {
	for _, m := range msgs {
		if s.net.send(s.now, m) {
			if m.Request != nil && s.rand.Float64() < s.faults.UnreachableProb {
				s.net.push(s.now+s.net.delay(), quorum.Message{From: m.To, To: m.From, ReqID: m.ReqID, Err: quorum.ErrUnreachable})
			}
		}
	}
}

// maybeReportUnreachable answers a request to a down node with a
// connection failure, as a real shell would.
func (s *Sim) maybeReportUnreachable(m quorum.Message) {
	if m.Request != nil && s.rand.Float64() < s.faults.UnreachableProb {
		s.net.push(s.now+s.net.delay(), quorum.Message{From: m.To, To: m.From, ReqID: m.ReqID, Err: quorum.ErrUnreachable})
	}
}

// roundTrip encodes and decodes the body with kmsg so that codec misuse
// (a field set at a version that cannot carry it, a missing default) shows.
func roundTrip(m quorum.Message) quorum.Message {
	if m.Request != nil {
		raw := m.Request.AppendTo(nil)
		r := kmsg.RequestForKey(m.Request.Key())
		r.SetVersion(m.Request.GetVersion())
		if err := r.ReadFrom(raw); err != nil {
			panic(fmt.Sprintf("decode %T v%d: %v", m.Request, m.Request.GetVersion(), err))
		}
		m.Request = r
	}
	if m.Response != nil {
		raw := m.Response.AppendTo(nil)
		r := kmsg.ResponseForKey(m.Response.Key())
		r.SetVersion(m.Response.GetVersion())
		if err := r.ReadFrom(raw); err != nil {
			panic(fmt.Sprintf("decode %T v%d: %v", m.Response, m.Response.GetVersion(), err))
		}
		m.Response = r
	}
	return m
}
