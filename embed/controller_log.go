package embed

import (
	"context"
	"errors"
	"sync"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/quorum"
)

// nodeQuorum is the controller's Log: it hands proposals to the node loop
// and brings the loop's reports back. The loop reports on its own goroutine
// (node.Proposal's Stamp and Done), which must never wait for the
// controller's lock; so reports only join a queue there, and one goroutine
// (pump) calls the controller's stamp and done, in the order the loop
// reported them. Proposals reach the loop in call order: Propose sends one
// itself only while nothing waits to be sent before it.
type nodeQuorum struct {
	n    *Node
	once sync.Once
	wake chan struct{}

	mu      sync.Mutex
	unsent  []*outgoing // waiting for room in the loop's events, in call order
	reports []report    // from the loop, in the order it made them
	pending []*outgoing // not yet settled, in call order
	closed  bool
}

// outgoing is one proposal on its way through the node loop.
type outgoing struct {
	p       *node.Proposal
	stamp   func(int64)
	done    func(int64, error)
	settled bool // guarded by nodeQuorum.mu
}

// report is what the loop said of a proposal: taken at first (settled
// false), or its outcome.
type report struct {
	o       *outgoing
	settled bool
	first   int64
	err     error
}

func newNodeQuorum(n *Node) *nodeQuorum {
	return &nodeQuorum{n: n, wake: make(chan struct{}, 1)}
}

// Propose implements controller.Log; it returns at once.
func (q *nodeQuorum) Propose(epoch int32, records []metadata.Record, stamp func(int64), done func(int64, error)) error {
	return q.propose(epoch, records, nil, stamp, done)
}

// KRaftVersion implements controller.KRaftLog.
func (q *nodeQuorum) KRaftVersion() int16 { return q.n.Status().KRaftVersion }

// ProposeKRaftUpgrade implements controller.KRaftLog: the node loop asks
// the quorum core to upgrade before it takes the records.
func (q *nodeQuorum) ProposeKRaftUpgrade(epoch int32, version int16, validateOnly bool, records []metadata.Record, done func(int64, error)) error {
	u := &node.KRaftUpgrade{Version: version, ValidateOnly: validateOnly}
	return q.propose(epoch, records, u, nil, func(first int64, err error) {
		var refused *quorum.KRaftUpgradeError
		if errors.As(err, &refused) {
			err = &controller.KRaftRefusal{Err: &controller.Error{Code: refused.Code, Message: refused.Message}}
		}
		done(first, err)
	})
}

func (q *nodeQuorum) propose(epoch int32, records []metadata.Record, upgrade *node.KRaftUpgrade, stamp func(int64), done func(int64, error)) error {
	o := &outgoing{stamp: stamp, done: done}
	o.p = &node.Proposal{Records: records, Epoch: epoch, KRaftUpgrade: upgrade, Done: func(first int64, err error) {
		q.report(report{o: o, settled: true, first: first, err: err})
	}}
	if stamp != nil {
		// The loop encodes the records right after it stamps them, and the
		// controller's stamp comes later, from the pump; so the offset goes
		// into the records here, on the loop, touching nothing else.
		o.p.Stamp = func(first int64) {
			controller.StampOffsets(records, first)
			q.report(report{o: o, first: first})
		}
	}
	q.once.Do(func() { go q.pump() })
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return controller.ErrNotController
	}
	q.pending = append(q.pending, o)
	if len(q.unsent) == 0 && q.n.runner.TryPropose(o.p) {
		return nil
	}
	q.unsent = append(q.unsent, o)
	q.poke()
	return nil
}

// Leader implements controller.Log.
func (q *nodeQuorum) Leader() (int32, bool) {
	st := q.n.Status()
	return st.Epoch, st.Role == quorum.RoleLeader
}

func (q *nodeQuorum) report(r report) {
	q.mu.Lock()
	q.reports = append(q.reports, r)
	q.mu.Unlock()
	q.poke()
}

func (q *nodeQuorum) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pump sends what waits for room in the loop's events and passes the
// loop's reports to the controller, until the loop stops.
func (q *nodeQuorum) pump() {
	stopped := q.n.runner.Done()
	for {
		select {
		case <-q.wake:
		case <-stopped:
			q.stop()
			return
		}
		deliver(q.takeReports())
		q.sendUnsent()
	}
}

// takeReports takes the loop's reports and notes which proposals settled.
func (q *nodeQuorum) takeReports() []report {
	q.mu.Lock()
	defer q.mu.Unlock()
	reports := q.reports
	q.reports = nil
	for _, r := range reports {
		if r.settled {
			r.o.settled = true
		}
	}
	for len(q.pending) > 0 && q.pending[0].settled {
		q.pending = q.pending[1:]
	}
	return reports
}

// sendUnsent hands the waiting proposals to the loop, oldest first, while
// the loop takes them.
func (q *nodeQuorum) sendUnsent() {
	for {
		q.mu.Lock()
		if len(q.unsent) == 0 {
			q.mu.Unlock()
			return
		}
		o := q.unsent[0]
		q.mu.Unlock()
		// Blocks while the loop's events are full; Propose meanwhile
		// queues behind o, so call order holds.
		_ = q.n.runner.Propose(context.Background(), o.p)
		q.mu.Lock()
		q.unsent = q.unsent[1:]
		q.mu.Unlock()
	}
}

// stop answers every proposal once the loop has stopped: what the loop
// reported before it stopped as it reported it, the rest as refused.
func (q *nodeQuorum) stop() {
	reports := q.takeReports()
	q.mu.Lock()
	q.closed = true
	for _, o := range q.pending {
		if !o.settled {
			reports = append(reports, report{o: o, settled: true, first: -1, err: ErrStopped})
		}
	}
	q.pending, q.unsent = nil, nil
	q.mu.Unlock()
	deliver(reports)
}

func deliver(reports []report) {
	for _, r := range reports {
		if !r.settled {
			r.o.stamp(r.first)
			continue
		}
		err := r.err
		if errors.Is(err, ErrNotController) || errors.Is(err, ErrStopped) {
			err = controller.ErrNotController
		}
		r.o.done(r.first, err)
	}
}
