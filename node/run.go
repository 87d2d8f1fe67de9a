package node

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/quorum"
)

// tickInterval is how often the quorum core's clock advances. The shortest
// KRaft timer is the 20 ms retry backoff, the rest are hundreds of
// milliseconds or more; what a tick does not time (new records, a moved
// high watermark, answers) the loop handles as it arrives. Each tick wakes
// the loop and the Go scheduler, which is most of an idle node's CPU: 0.025
// cores at 5 ms, about half that at 10 ms.
const tickInterval = 10 * time.Millisecond

// PeerTransport is a Transport production can also ask how many requests
// are still on their way (to let EndQuorumEpoch leave before a stop) and
// close.
type PeerTransport interface {
	Transport
	Pending() int
	Close()
}

// Runner drives a Node in production: one goroutine runs the loop and takes
// events from request handlers, the peer client, proposers, the ticker and
// the syncer; the wall clock and crypto-seeded randomness stand in for the
// simulator's.
type Runner struct {
	node   *Node
	peers  PeerTransport
	syncer *BackgroundSyncer
	log    zerolog.Logger

	events chan event
	stop   chan struct{}
	done   chan struct{}
	err    error
	// driving counts the Drive calls under way; settling is set once the
	// loop settles its last events (settleEvents).
	driving  atomic.Int32
	settling atomic.Bool
}

type event struct {
	inbound  kmsg.Request
	reply    func(kmsg.Response)
	peer     *quorum.Message
	proposal *Proposal
	control  func(core *controller.Core, now time.Time)
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// goExecutor runs background work (writing a snapshot: a second of CPU at
// a million partitions) on a goroutine locked to an OS thread of lower
// priority (lowerThreadPriority), so that heartbeats and the quorum's own
// work are not queued behind it for a CPU. While it runs, the runtime gets
// one more P (extraProc), else the work would hold one of the Ps the
// heartbeats' goroutines run on, whatever the kernel's priorities.
//
// The goroutines and their threads are kept for the next job of their
// urgency, never unlocked (their priority stays theirs, and an
// unprivileged thread cannot raise it again): a new thread for every
// snapshot would fault in a new stack each time, memory the leader's
// resident size shows. There are as many as jobs ever ran at once, one
// in a node, for each urgency.
func goExecutor(urgency Urgency, work func() error) <-chan error {
	done := make(chan error, 1)
	job := backgroundJob{work: work, done: done}
	background.Lock()
	if idle := background.idle[urgency]; len(idle) > 0 {
		inbox := idle[len(idle)-1]
		background.idle[urgency] = idle[:len(idle)-1]
		background.Unlock()
		inbox <- job // its one slot is free: the caller, the node's loop, never waits
		return done
	}
	background.started++
	background.Unlock()
	go backgroundWorker(urgency, job)
	return done
}

type backgroundJob struct {
	work func() error
	done chan<- error
}

// background is goExecutor's pool: the inboxes of the idle workers of
// each urgency, and how many workers were ever started.
var background struct {
	sync.Mutex
	idle    [Idle + 1][]chan backgroundJob
	started int
}

// backgroundWorker runs first, then each job put in its inbox. It lists
// itself idle before it reports a job done, so that the job's owner, who
// may start the next one at once, finds it.
func backgroundWorker(urgency Urgency, first backgroundJob) {
	runtime.LockOSThread()
	lowerThreadPriority(urgency)
	inbox := make(chan backgroundJob, 1)
	for job := first; ; job = <-inbox {
		release := extraProc()
		err := job.work()
		release()
		background.Lock()
		background.idle[urgency] = append(background.idle[urgency], inbox)
		background.Unlock()
		job.done <- err
	}
}

// extraProcs counts the running background jobs that added a P.
var extraProcs struct {
	sync.Mutex
	n    int
	base int // GOMAXPROCS before the first job added one
}

// extraProc raises GOMAXPROCS by one for the caller's job and returns
// what puts it back: when the last job ends, the value before, or the
// runtime's own default (which follows the CPU limit) when GOMAXPROCS is
// not set in the environment.
func extraProc() (release func()) {
	extraProcs.Lock()
	defer extraProcs.Unlock()
	if extraProcs.n == 0 {
		extraProcs.base = runtime.GOMAXPROCS(0)
	}
	extraProcs.n++
	runtime.GOMAXPROCS(extraProcs.base + extraProcs.n)
	return func() {
		extraProcs.Lock()
		defer extraProcs.Unlock()
		extraProcs.n--
		switch {
		case extraProcs.n > 0:
			runtime.GOMAXPROCS(extraProcs.base + extraProcs.n)
		case os.Getenv("GOMAXPROCS") == "":
			runtime.SetDefaultGOMAXPROCS()
		default:
			runtime.GOMAXPROCS(extraProcs.base)
		}
	}
}

// NewRunner builds the production node over disk. peers is the transport;
// its answers must be handed back with DeliverPeer.
func NewRunner(cfg Config, disk *Disk, sm StateMachine, peers PeerTransport, log zerolog.Logger) (*Runner, error) {
	r := &Runner{peers: peers, log: log, events: make(chan event, 1024), stop: make(chan struct{}), done: make(chan struct{})}
	r.syncer = NewSyncer(func() error { return timedSync(cfg.Meter, wallClock{}, disk.Log.Sync) })
	env := Env{
		Meter:      cfg.Meter,
		Transport:  peers,
		Clock:      wallClock{},
		Syncer:     r.syncer,
		Background: goExecutor,
		Rand:       rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(cfg.NodeID))),
	}
	n, err := New(cfg, disk, sm, env, log)
	if err != nil {
		r.syncer.Close()
		return nil, err
	}
	r.node = n
	return r, nil
}

// Node is the driven node; touch it only through the Runner while it runs,
// but for Status.
func (r *Runner) Node() *Node { return r.node }

// Status is the quorum's state as of the last Ready.
func (r *Runner) Status() quorum.Status { return r.node.Status() }

// CaughtUp is Node.CaughtUp.
func (r *Runner) CaughtUp() <-chan struct{} { return r.node.CaughtUp() }

// Run drives the node until Stop; it returns the first fatal error (a disk
// failure or a safety violation), after which the process must exit.
func (r *Runner) Run() error {
	defer close(r.done)
	defer r.peers.Close()
	defer r.syncer.Close()
	ticker := time.NewTicker(tickInterval)
	defer ticker.Stop()
	n := r.node
	meter := n.env.Meter
	for {
		var waitStart time.Time
		if meter != nil {
			waitStart = time.Now()
		}
		select {
		case ev := <-r.events:
			r.handle(ev)
		case res := <-r.syncer.Results():
			n.Synced(res.job, res.err)
		case <-ticker.C:
			// What already arrived counts before the clock moves: an
			// answer that waited for a CPU as long as the tick did must
			// not let a silence bound expire (quorum/silence.go).
			r.drain()
			n.Tick()
		case <-r.stop:
			r.err = r.shutdown()
			return r.err
		}
		if meter != nil {
			meter.Idled(time.Since(waitStart))
		}
		// Take everything already queued before writing: proposals that
		// arrived during the last fsync share the next one (group commit).
		r.drain()
		if err := n.Process(); err != nil {
			r.err = err
			n.Close(err)
			r.settleEvents()
			return err
		}
	}
}

// drain handles every event already queued.
func (r *Runner) drain() {
	for r.node.Err() == nil {
		select {
		case ev := <-r.events:
			r.handle(ev)
		default:
			return
		}
	}
}

func (r *Runner) handle(ev event) {
	switch {
	case ev.inbound != nil:
		r.node.inbound(ev.inbound, waiter{reply: ev.reply, stream: true})
	case ev.peer != nil:
		r.node.StepPeer(*ev.peer)
	case ev.proposal != nil:
		r.node.Propose(ev.proposal)
	case ev.control != nil:
		r.node.seam.Do(ev.control)
	}
}

// Drive is the controller's Driver (controller.Controller.Serve): it
// hands input to the loop, which runs it on the core of the node's seam
// (AttachController), and reports false once the loop has stopped.
// Once it reported true the input runs, even when the loop stops: the
// loop settles every input handed over (settleEvents).
func (r *Runner) Drive(input func(core *controller.Core, now time.Time)) bool {
	r.driving.Add(1)
	defer r.driving.Add(-1)
	if r.node.seam == nil || r.settling.Load() {
		return false
	}
	r.events <- event{control: input} // the loop, or settleEvents, takes it
	return true
}

// settleEvents answers the events still queued once the node is closed:
// requests get no answer, proposals ErrStopped, and the controller's
// inputs run on a core that leads nothing. It returns once no Drive is
// under way, so that none is left behind.
func (r *Runner) settleEvents() {
	r.settling.Store(true)
	for {
		select {
		case ev := <-r.events:
			switch {
			case ev.inbound != nil:
				ev.reply(nil)
			case ev.proposal != nil:
				ev.proposal.Done(-1, ErrStopped)
			case ev.control != nil:
				r.node.seam.Do(ev.control)
			}
			continue
		default:
		}
		if r.driving.Load() == 0 && len(r.events) == 0 {
			return
		}
		runtime.Gosched()
	}
}

func (r *Runner) shutdown() error {
	began := time.Now()
	n := r.node
	wasLeader := n.soft.Role == quorum.RoleLeader
	n.Resign()
	perr := n.Process()
	// Give EndQuorumEpoch a moment to leave before the connections close.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) && r.peers.Pending() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if resigned, epoch, to, successors := n.Resignation(); wasLeader && resigned {
		r.log.Info().Int32("epoch", epoch).Ints32("end_quorum_epoch_to", to).Ints32("preferred_successors", successors).
			Int("requests_unsent", r.peers.Pending()).Dur("took_ms", time.Since(began)).Msg("resigned leadership to stop")
	} else {
		r.log.Info().Str("role", roleName(n.soft)).Int32("epoch", n.soft.Epoch).Int32("leader", n.soft.LeaderID).
			Msg("stopping: not the leader, nothing to resign")
	}
	err := n.Close(ErrStopped)
	r.settleEvents()
	r.log.Info().Int64("log_end_offset", n.disk.Log.EndOffset()).Int64("high_watermark", n.hw).Dur("took_ms", time.Since(began)).
		Msg("quorum loop stopped")
	if perr != nil {
		return perr
	}
	return err
}

// Stop resigns leadership gracefully (EndQuorumEpoch), then stops the loop.
func (r *Runner) Stop() error {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	return r.err
}

// Done is closed once the loop has stopped.
func (r *Runner) Done() <-chan struct{} { return r.done }

// DeliverPeer hands the answer (or failure) of a peer request to the loop;
// the peer client calls it from its goroutines.
func (r *Runner) DeliverPeer(m quorum.Message) {
	select {
	case r.events <- event{peer: &m}:
	case <-r.done:
	}
}

// Propose hands p to the loop; p.Done is called on the loop goroutine, or
// here with ErrStopped when the loop has stopped. It returns ctx's error,
// without calling p.Done, when ctx ends first.
func (r *Runner) Propose(ctx context.Context, p *Proposal) error {
	select {
	case r.events <- event{proposal: p}:
		return nil
	case <-r.done:
		p.Done(-1, ErrStopped)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryPropose hands p to the loop if its events have room, and reports
// whether it did; it never blocks.
func (r *Runner) TryPropose(p *Proposal) bool {
	select {
	case r.events <- event{proposal: p}:
		return true
	default:
		return false
	}
}

// Raft hands a KRaft request to the core and waits for its answer. A
// FetchSnapshot chunk comes back as a *SnapshotChunk, which the caller
// must Close.
func (r *Runner) Raft(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	call := &raftCall{reply: make(chan kmsg.Response, 1)}
	select {
	case r.events <- event{inbound: req, reply: call.answer}:
	case <-r.done:
		return nil, ErrStopped
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case resp := <-call.reply:
		if resp == nil {
			return nil, ErrStopped
		}
		return resp, nil
	case <-ctx.Done():
		call.abandoned.Store(true)
		call.drain()
		return nil, ctx.Err()
	}
}

// raftCall is one Raft request's wait for its answer, in one allocation
// beside its channel: a leader takes one for every follower's and
// observer's Fetch.
type raftCall struct {
	reply chan kmsg.Response
	// A caller gone before its answer came leaves an answer nobody
	// closes; whichever side comes second closes it.
	abandoned atomic.Bool
}

// answer hands the core's answer to the caller; it never blocks.
func (c *raftCall) answer(resp kmsg.Response) {
	c.reply <- resp
	if c.abandoned.Load() {
		c.drain()
	}
}

func (c *raftCall) drain() {
	select {
	case resp := <-c.reply:
		closeAnswer(resp)
	default:
	}
}

// closeAnswer releases what an answer holds open: a SnapshotChunk's file.
func closeAnswer(resp kmsg.Response) {
	if c, ok := resp.(*SnapshotChunk); ok {
		c.Close()
	}
}
