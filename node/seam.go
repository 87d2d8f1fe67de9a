package node

import (
	"errors"
	"time"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/quorum"
)

// controllerTick is how often the controller's timed work runs
// (controller.Core.Tick: fencing brokers whose session expired,
// preferred-leader balancing, the active controller's own registration):
// far below the 9 s broker session and quick enough to register promptly.
const controllerTick = 100 * time.Millisecond

// Seam is the one place the node's loop drives the controller's Core, in
// production (Runner) and in the simulator alike. Every input the core
// takes comes through it, on the loop's goroutine, which is also the one
// that replays committed records into the core's committed image:
// operations with the loop's time (Do), the timed work every
// controllerTick of the node's clock, the quorum's state (leadership, its
// epoch, kraft.version) whenever it changes, and the log's stamp and done
// for each proposal. The core's proposals wait in out until the input that
// made them has returned, then go to Propose: so the core is never called
// back from inside its own Propose, and it needs no lock.
type Seam struct {
	n    *Node
	core *controller.Core
	// out are the core's proposals not yet handed to the node.
	out      []*Proposal
	told     controller.Quorum // what the core was last told
	nextTick time.Time
	stopped  bool
	// committed, if set, hears every proposal that committed (the
	// simulator's checker).
	committed func(first int64, records []metadata.Record)
}

// AttachController gives the node the controller core it drives: the
// committed side ctl (already the node's state machine) and its active
// Core built with s. Call it once, before the node is driven.
func (n *Node) AttachController(ctl *controller.Controller, s controller.Settings) *Seam {
	a := &Seam{n: n, told: controller.Quorum{KRaftVersion: s.KRaftVersion}}
	a.core = controller.NewCore(ctl, seamLog{a}, s)
	n.seam = a
	a.observe()
	return a
}

// OnCommitted has f hear, on the loop, every proposal of the core that
// committed, with its first offset and records.
func (a *Seam) OnCommitted(f func(first int64, records []metadata.Record)) { a.committed = f }

// Do runs input on the core with the node's time. It is for the loop's
// goroutine only (Runner.Control brings inputs there).
func (a *Seam) Do(input func(core *controller.Core, now time.Time)) {
	a.observe()
	input(a.core, a.n.env.Clock.Now())
	a.flush()
}

// observe tells the core where the quorum stands, if that changed. After
// the node stops the core is told it leads nothing, so that what is
// queued fails.
func (a *Seam) observe() {
	q := controller.Quorum{}
	if !a.stopped && a.n.fatal == nil {
		st := a.n.core.Status()
		q = controller.Quorum{Epoch: st.Epoch, Leader: st.Role == quorum.RoleLeader, KRaftVersion: st.KRaftVersion}
	} else {
		q.KRaftVersion = a.told.KRaftVersion
	}
	if q != a.told {
		a.told = q
		a.core.SetQuorum(q)
	}
}

// tick runs the core's timed work once every controllerTick.
func (a *Seam) tick(now time.Time) {
	if now.Before(a.nextTick) {
		return
	}
	a.nextTick = now.Add(controllerTick)
	a.observe()
	a.core.Tick(now)
	a.flush()
}

// flush hands the core's proposals to the node, in the order made; what
// the node answers at once (a stamp, a refusal) may make more.
func (a *Seam) flush() {
	for len(a.out) > 0 {
		p := a.out[0]
		a.out[0] = nil
		a.out = a.out[1:]
		if a.stopped {
			p.Done(-1, ErrStopped)
			continue
		}
		a.n.Propose(p)
		a.observe() // a kraft.version upgrade shows at once
	}
}

// stop answers what is left once the node stops: the core learns it leads
// nothing, and what it proposes from then on is refused.
func (a *Seam) stop() {
	a.stopped = true
	a.observe()
	a.flush()
}

// seamLog is the core's Log: proposals wait in the seam (see flush).
type seamLog struct{ a *Seam }

func (l seamLog) Propose(epoch int32, records []metadata.Record, stamp func(int64), done func(int64, error)) error {
	return l.propose(&Proposal{Records: records, Epoch: epoch, Stamp: stamp}, done)
}

func (l seamLog) ProposeKRaftUpgrade(epoch int32, version int16, validateOnly bool, records []metadata.Record, done func(int64, error)) error {
	u := &KRaftUpgrade{Version: version, ValidateOnly: validateOnly}
	return l.propose(&Proposal{Records: records, Epoch: epoch, KRaftUpgrade: u}, done)
}

func (l seamLog) propose(p *Proposal, done func(int64, error)) error {
	a := l.a
	p.Done = func(first int64, err error) {
		var refused *quorum.KRaftUpgradeError
		switch {
		case errors.As(err, &refused):
			err = &controller.KRaftRefusal{Err: &controller.Error{Code: refused.Code, Message: refused.Message}}
		case errors.Is(err, ErrStopped):
			err = controller.ErrNotController
		case err == nil && first >= 0 && a.committed != nil:
			a.committed(first, p.Records)
		}
		done(first, err)
	}
	a.out = append(a.out, p)
	return nil
}
