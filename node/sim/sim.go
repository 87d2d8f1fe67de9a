// Package sim is a deterministic simulator of kraftd quorums in the style of
// TigerBeetle's VOPR: one goroutine runs 1-5 voters and some observers from
// one seed, each the production runtime (package node) with its real
// controller, over the real storage code on a simulated disk (storage.MemFS:
// a crash keeps what was synced and may keep any byte prefix of what was
// not, a fault fails a write or an fsync) and a simulated network (delay,
// reorder, drop, duplicate, partitions, lost connections). Fault knobs are
// drawn per seed (swarm testing). Every message goes through kmsg's
// AppendTo/ReadFrom on the way, and invariants are checked after every step.
//
// It must never contain a Ready loop or a controller log of its own: it
// drives node.Node through the same entry points production's node.Runner
// uses, and each node's controller core through the node's seam
// (node.Seam.Do), as production's request handlers reach it.
package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage"
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
	TornCrashProb     float64 // per node per step: the next write or fsync fails and the node crashes
	RestartProb       float64 // per down node per step
	ProposeProb       float64 // per step
	UnreachableProb   float64 // a lost request is reported back as unreachable; a down node refuses, and a crash closes its connections
	DeferSyncProb     float64 // a leader's deferred fsync waits 1-4 steps
	SnapshotBytes     int64   // metadata.log.max.record.bytes.between.snapshots
	RetentionBytes    int64   // metadata.max.retention.bytes
	SegmentBytes      int64   // metadata.log.segment.bytes
	OldPeer           int32   // a voter that only speaks Vote v1 / Fetch v16, or -1
	Brokers           int     // simulated brokers
	BrokerAwayProb    float64 // per broker action: it goes away and comes back as a new incarnation
	AdminProb         float64 // per step: an admin operation on topics
	// Dynamic formats the quorum with --initial-controllers (kraft.version
	// 1) instead of controller.quorum.voters; ReconfigProb is then, per
	// step, the chance of an AddRaftVoter or RemoveRaftVoter at a leader.
	Dynamic      bool
	ReconfigProb float64
	// ReformatProb is, per down node per step in a dynamic quorum, the
	// chance its disk is replaced and formatted again (a new directory id).
	ReformatProb float64
	// AutoJoin turns controller.quorum.auto.join.enable on at every node
	// of a dynamic quorum: observers add themselves, and a node formatted
	// anew removes its old replica first.
	AutoJoin bool
	// GzipSnapshots gzips the nodes' snapshot data batches (kraftd's
	// default); else they are plain, as Apache writes them.
	GzipSnapshots bool
	// Silent are the silent failures: pauses, slow fsyncs, clock jumps,
	// and the healthy runs of the spurious-election rule (silent.go).
	Silent silentFaults
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
	// Broken breaks rules of the runtime itself, for the same purpose.
	Broken node.BrokenRules
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
		TornCrashProb:   r.Float64() * 0.001,
		RestartProb:     0.005 + r.Float64()*0.02,
		ProposeProb:     0.02 + r.Float64()*0.2,
		UnreachableProb: r.Float64(),
		DeferSyncProb:   r.Float64(),
		SnapshotBytes:   8192 + r.Int64N(65536),
		RetentionBytes:  -1,
		SegmentBytes:    4096 + r.Int64N(16384),
		OldPeer:         -1,
		Brokers:         r.IntN(5),
		BrokerAwayProb:  r.Float64() * 0.05,
		AdminProb:       r.Float64() * 0.05,
	}
	f.DelayMaxMs = f.DelayMinMs + r.Int64N(60)
	if r.IntN(2) == 0 {
		f.RetentionBytes = r.Int64N(32768)
	}
	if r.IntN(4) == 0 {
		f.OldPeer = 1 + r.Int32N(int32(f.Voters))
	}
	// Drawn last, so the knobs above stay what they were for each seed.
	if r.IntN(2) == 0 && f.OldPeer < 0 {
		f.Dynamic, f.ReconfigProb, f.ReformatProb = true, r.Float64()*0.02, r.Float64()*0.01
		f.AutoJoin = r.IntN(3) == 0
	}
	f.GzipSnapshots = r.IntN(2) == 0
	drawSilentFaults(r, &f)
	return f
}

// Sim is one simulation run.
type Sim struct {
	opts    Options
	faults  Faults
	rand    *rand.Rand
	net     *network
	nodes   []*simNode
	byID    map[int32]*simNode
	voters  map[int32][]quorum.Endpoint
	ids     []int32
	now     int64
	check   *checker
	trace   []string
	record  int
	parted  bool
	brokers []*simBroker
	history history
	stats   Stats
	// failure is the first violation the checker saw inside a node's loop
	// (through its Observer); the step ends with it.
	failure error
}

// Stats count what one run did and suffered.
type Stats struct {
	Seeds, Steps                       int64
	Crashes, DiskFaults, Partitions    int64
	Elections, Truncations, Snapshots  int64 // leaders elected, logs cut, snapshots installed from a leader
	Commits                            int64 // the highest committed offset, summed over seeds
	Registrations, Heartbeats          int64 // answered without error
	AlterPartitions                    int64 // ISR changes answered without error
	ControllerRegistrations            int64 // registrations a controller sent its leader, answered without error
	KRaftUpgrades                      int64 // kraft.version upgrades answered without error (validate-only left out)
	TopicOps, TopicOpsOK, TopicUnknown int64 // admin operations, answered ok, of unknown outcome
	VoterChanges, VoterChangesOK       int64 // AddRaftVoter and RemoveRaftVoter asked, answered ok
	AutoJoins                          int64 // AddRaftVoter and RemoveRaftVoter an auto-joining node sent itself
	Pauses, ClockJumps                 int64 // nodes paused, clocks jumped
	HealthySeeds                       int64 // seeds run under the spurious-election rule
}

// Add sums two counts.
func (a *Stats) Add(b Stats) {
	av, bv := reflect.ValueOf(a).Elem(), reflect.ValueOf(b)
	for i := range av.NumField() {
		av.Field(i).SetInt(av.Field(i).Int() + bv.Field(i).Int())
	}
}

// Run runs one seed and returns the first invariant violation, with the
// tail of the event trace.
func Run(opts Options) error {
	_, err := RunStats(opts)
	return err
}

// RunStats is Run that also reports what the run did.
func RunStats(opts Options) (Stats, error) {
	s := newSim(opts)
	err := s.run()
	s.stats.Seeds, s.stats.Commits = 1, max(0, s.check.maxHW)
	if s.faults.healthy() {
		s.stats.HealthySeeds = 1
	}
	for _, op := range s.history.ops {
		s.stats.TopicOps++
		switch op.Output.(outcome) {
		case outcomeOK:
			s.stats.TopicOpsOK++
		case outcomeUnknown:
			s.stats.TopicUnknown++
		}
	}
	if err != nil {
		return s.stats, fmt.Errorf("%v\nfaults: %+v\nlast events:\n  %s", err, s.faults, strings.Join(s.trace, "\n  "))
	}
	return s.stats, nil
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
		s.voters[int32(i)] = []quorum.Endpoint{endpoint(int32(i))}
	}
	add := func(id int32, voter bool) {
		n := &simNode{s: s, id: id, voter: voter, fs: storage.NewMemFS()}
		s.format(n)
		s.nodes = append(s.nodes, n)
		s.byID[id] = n
		s.ids = append(s.ids, id)
		if err := s.start(n); err != nil {
			panic(err) // a fresh directory always opens
		}
	}
	for i := 1; i <= s.faults.Voters; i++ {
		add(int32(i), true)
	}
	for i := 1; i <= s.faults.Observers; i++ {
		add(int32(100+i), false)
	}
	for i := range s.faults.Brokers {
		s.brokers = append(s.brokers, &simBroker{id: int32(1000 + i), incarnation: [16]byte{1: byte(i), 15: 0xbb}, epoch: -1, lastEpoch: -1})
	}
	return s
}

func (s *Sim) event(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf("t=%d ", s.now)+fmt.Sprintf(format, args...))
	if len(s.trace) > 80 {
		s.trace = s.trace[1:]
	}
}

func (s *Sim) run() error {
	total := s.opts.SafetySteps + s.opts.LivenessSteps
	for step := 0; step < total; step++ {
		s.now += s.opts.StepMs
		s.stats.Steps++
		if step == s.opts.SafetySteps {
			if err := s.beginLiveness(); err != nil {
				return err
			}
		}
		if step < s.opts.SafetySteps {
			if err := s.injectFaults(); err != nil {
				return err
			}
			s.injectSilentFaults()
		}
		if err := s.step(); err != nil {
			return err
		}
		if step >= s.opts.SafetySteps && s.check.livenessMet() {
			return s.check.final()
		}
	}
	return fmt.Errorf("liveness: no leader advanced the high watermark past %d within %d ms after healing (max committed %d)%s",
		s.check.livenessFrom, int64(s.opts.LivenessSteps)*s.opts.StepMs, s.check.maxHW, s.describeNodes())
}

// describeNodes lists each node's role, log end and voter set, for a
// liveness failure's message.
func (s *Sim) describeNodes() string {
	var b strings.Builder
	for _, n := range s.nodes {
		if !n.up {
			fmt.Fprintf(&b, "\n  n%d down", n.id)
			continue
		}
		st := n.node.Status()
		fmt.Fprintf(&b, "\n  n%d %s epoch=%d end=%d@%d hw=%d voter=%t voters=%v", n.id, st.Role, st.Epoch, st.EndOffset, st.LastEpoch, st.HighWatermark, st.IsVoter, st.Voters.IDs())
	}
	return b.String()
}

func (s *Sim) beginLiveness() error {
	s.net.heal()
	s.faults.DropProb, s.faults.DuplicateProb = 0, 0
	for _, n := range s.nodes {
		n.fs.FailWrite(0)
		n.fs.FailSync(0)
		n.pausedUntil = 0
		if !n.up {
			if err := s.start(n); err != nil {
				return err
			}
			s.event("n%d restarted for liveness", n.id)
		}
	}
	s.check.livenessFrom = s.check.maxHW
	s.event("healed; liveness phase from hw %d", s.check.maxHW)
	return nil
}

func (s *Sim) injectFaults() error {
	f := &s.faults
	if f.PartitionMode != PartitionNone {
		if !s.parted && s.rand.Float64() < f.PartitionProb {
			s.parted = true
			s.stats.Partitions++
			voters := slices.Sorted(func(yield func(int32) bool) {
				for id := range s.voters {
					if !yield(id) {
						return
					}
				}
			})
			s.event("partition %s", s.net.partition(s.ids, voters))
		} else if s.parted && s.rand.Float64() < f.HealProb {
			s.parted = false
			s.net.heal()
			s.event("heal")
		}
	}
	for _, n := range s.nodes {
		if f.Dynamic && !n.up && s.rand.Float64() < f.ReformatProb && s.mayReformat(n) {
			s.reformat(n)
		}
		switch {
		case n.up && s.rand.Float64() < f.CrashProb:
			s.crash(n)
		case n.up && s.rand.Float64() < f.TornCrashProb:
			// The next write or fsync fails: the node crashes there, in
			// the middle of whatever the loop was persisting.
			if s.rand.IntN(2) == 0 {
				n.fs.FailWrite(1 + s.rand.IntN(3))
			} else {
				n.fs.FailSync(1 + s.rand.IntN(3))
			}
		case !n.up && s.rand.Float64() < f.RestartProb:
			if err := s.start(n); err != nil {
				return err
			}
			st := n.node.Status()
			s.event("n%d restarted as %s epoch=%d (log %d-%d)", n.id, st.Role, st.Epoch, n.disk.Log.StartOffset(), n.disk.Log.EndOffset())
		}
	}
	return nil
}

func (s *Sim) step() error {
	for _, m := range s.net.due(s.now) {
		to := s.byID[m.To]
		if to == nil || !to.up {
			s.maybeRefuse(m)
			continue
		}
		if !to.running() {
			s.deliverLater(to, m)
			continue
		}
		m = roundTrip(m)
		if m.Request != nil {
			to.inbound(m)
		} else {
			to.node.StepPeer(m)
		}
	}
	for _, n := range s.nodes {
		if n.running() {
			n.node.Tick()
		}
	}
	s.workload()
	s.reconfigWork()
	s.clusterWork()
	for _, n := range s.nodes {
		if n.running() {
			n.finishDueSync()
		}
	}
	for _, n := range s.nodes {
		if !n.running() {
			continue
		}
		if err := n.node.Process(); err != nil {
			if !errors.Is(err, storage.ErrInjected) {
				return fmt.Errorf("n%d: %w", n.id, err)
			}
			s.event("n%d disk fault: %v", n.id, err)
			s.stats.DiskFaults++
			s.crash(n)
			continue
		}
		if err := s.check.afterProcess(n); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sim) sendRequest(from *simNode, to int32, reqID uint64, req kmsg.Request) {
	if k := req.Key(); k == 80 || k == 81 {
		s.stats.AutoJoins++ // only auto-join sends these from node to node
	}
	m := quorum.Message{From: from.id, To: to, ReqID: reqID, Request: req}
	if s.net.send(s.now, m) {
		if s.rand.Float64() < s.faults.UnreachableProb {
			s.net.push(s.now+s.net.delay(), quorum.Message{From: to, To: from.id, ReqID: reqID, Err: quorum.ErrUnreachable})
		}
	}
}

// maybeRefuse answers a request to a down node, sometimes, with the
// refused connection a live host with no process behind the port gives
// (quorum.ErrPeerGone); otherwise the node's machine is taken for gone
// and the request is lost.
func (s *Sim) maybeRefuse(m quorum.Message) {
	if m.Request != nil && s.rand.Float64() < s.faults.UnreachableProb {
		s.net.push(s.now+s.net.delay(), quorum.Message{From: m.To, To: m.From, ReqID: m.ReqID, Err: quorum.ErrPeerGone})
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
