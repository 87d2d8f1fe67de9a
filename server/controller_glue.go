package server

// Glue between the node (quorum loop) and the controller's operations: the
// Log the controller proposes through, the clock that drives the
// controller's timed work, this controller's registration with a leader,
// and the helpers the controller-API handlers share.

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/protocol"
	"github.com/kraftd/kraftd/quorum"
)

// nodeQuorum is the controller's Log: it hands proposals to the node loop
// and brings the loop's reports back. The controller's callbacks never run
// on the node loop, which must not wait for the controller's lock: one
// goroutine (pump) sends the proposals, in order, and waits for their
// offsets and outcomes, in order, on the channels the loop answers on.
type nodeQuorum struct {
	n    *Node
	once sync.Once
	mu   sync.Mutex
	// sent holds proposals Propose handed to the loop itself, and queue
	// those it could not, both not yet with the pump. backlog is set while
	// the pump has proposals to send: Propose then queues behind them, so
	// the loop takes proposals in call order. closed is set once the pump
	// has stopped, after which Propose refuses.
	sent, queue []*outgoing
	backlog     bool
	closed      bool
	wake        chan struct{}
}

// outgoing is one proposal on its way through the node loop.
type outgoing struct {
	p       *proposal
	stamp   func(int64)
	done    func(int64, error)
	taken   bool // its offset has been read (and stamp called)
	settled bool // its outcome has been read
	first   int64
	err     error
}

func newNodeQuorum(n *Node) *nodeQuorum {
	return &nodeQuorum{n: n, wake: make(chan struct{}, 1)}
}

// Propose hands the records to the node loop, or, when the loop's events
// are full or the pump has proposals to send first, queues them for the
// pump; it returns at once either way. Sending here saves the common case
// a hop through the pump on its way to the loop.
func (q *nodeQuorum) Propose(epoch int32, records []metadata.Record, stamp func(int64), done func(int64, error)) error {
	p := &proposal{records: records, offset: make(chan int64, 1), done: make(chan error, 1), epoch: epoch}
	if stamp != nil {
		// The loop encodes the records right after it stamps them, and the
		// controller's stamp comes later; so the offset goes into the
		// records here, touching nothing else.
		p.stamp = func(first int64) { controller.StampOffsets(records, first) }
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return controller.ErrNotController
	}
	o := &outgoing{p: p, stamp: stamp, done: done, first: -1}
	sent := false
	if !q.backlog {
		select {
		case q.n.events <- nodeEvent{proposal: p}:
			sent = true
		default:
		}
	}
	if sent {
		q.sent = append(q.sent, o)
	} else {
		q.queue, q.backlog = append(q.queue, o), true
	}
	q.mu.Unlock()
	q.once.Do(func() { go q.pump() })
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return nil
}

// pump sends queued proposals to the node loop and reports on them, in
// order, until the loop stops. It watches the oldest proposal's outcome and
// the offset of the oldest stamped one not yet taken, so a registration in
// flight reaches the controller's speculative image when the log takes it,
// not when the writes before it commit.
func (q *nodeQuorum) pump() {
	var unsent, inflight, stamped []*outgoing
	for {
		for len(stamped) > 0 && (stamped[0].taken || stamped[0].settled) {
			stamped = stamped[1:]
		}
		var send chan<- nodeEvent
		var ev nodeEvent
		if len(unsent) > 0 {
			send, ev = q.n.events, nodeEvent{proposal: unsent[0].p}
		}
		var headDone <-chan error
		if len(inflight) > 0 {
			headDone = inflight[0].p.done
		}
		var watchOffset <-chan int64
		var watchDone <-chan error
		if len(stamped) > 0 {
			watchOffset, watchDone = stamped[0].p.offset, stamped[0].p.done
		}
		select {
		case <-q.wake:
			q.mu.Lock()
			// What Propose sent went to the loop before anything still
			// queued, and after everything the pump sent.
			for _, o := range q.sent {
				inflight, stamped = sentOne(inflight, stamped, o)
			}
			unsent = append(unsent, q.queue...)
			q.sent, q.queue = nil, nil
			q.backlog = len(unsent) > 0
			q.mu.Unlock()
		case send <- ev:
			inflight, stamped = sentOne(inflight, stamped, unsent[0])
			unsent = unsent[1:]
			if len(unsent) == 0 {
				q.mu.Lock()
				if len(q.queue) == 0 {
					q.backlog = false
				}
				q.mu.Unlock()
			}
		case first := <-watchOffset:
			stamped[0].take(first)
		case err := <-watchDone:
			stamped[0].settle(err)
		case err := <-headDone:
			inflight[0].settle(err)
		case <-q.n.done:
			q.stop(inflight, unsent)
			return
		}
		for len(inflight) > 0 && inflight[0].settled {
			o := inflight[0]
			inflight = inflight[1:]
			o.done(o.first, o.err)
		}
	}
}

// stop answers every proposal once the loop has stopped: those it
// answered just before stopping as it did, the others as refused.
func (q *nodeQuorum) stop(inflight, unsent []*outgoing) {
	q.mu.Lock()
	q.closed = true
	pending := append(append(append(inflight, q.sent...), unsent...), q.queue...)
	q.sent, q.queue = nil, nil
	q.mu.Unlock()
	for _, o := range pending {
		if !o.settled {
			select {
			case err := <-o.p.done:
				o.settle(err)
			default:
				o.settle(ErrStopped)
			}
		}
		o.done(o.first, o.err)
	}
}

// sentOne notes that o went to the loop.
func sentOne(inflight, stamped []*outgoing, o *outgoing) ([]*outgoing, []*outgoing) {
	inflight = append(inflight, o)
	if o.stamp != nil {
		stamped = append(stamped, o)
	}
	return inflight, stamped
}

func (o *outgoing) take(first int64) {
	o.taken, o.first = true, first
	if o.stamp != nil {
		o.stamp(first)
	}
}

// settle records the loop's outcome; the offset, if the log took the
// records, was sent before it.
func (o *outgoing) settle(err error) {
	if !o.taken {
		select {
		case first := <-o.p.offset:
			o.take(first)
		default:
		}
	}
	if errors.Is(err, ErrNotController) || errors.Is(err, ErrStopped) {
		err = controller.ErrNotController
	}
	o.settled, o.err = true, err
}

func (q *nodeQuorum) Leader() (int32, bool) {
	st := q.n.Status()
	return st.Epoch, st.Role == quorum.RoleLeader
}

// attachController gives the controller its log and settings.
func (n *Node) attachController() {
	var incarnation [16]byte
	_, _ = crand.Read(incarnation[:])
	var listeners []controller.Listener
	for _, e := range n.cfg.ControllerEndpoints() {
		listeners = append(listeners, controller.Listener{Name: e.Name, Host: e.Host, Port: e.Port})
	}
	n.ctl.Activate(newNodeQuorum(n), controller.Settings{
		NodeID:                   n.cfg.NodeID,
		ClusterID:                n.disk.Meta.ClusterID,
		SessionTimeout:           time.Duration(n.cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		DefaultPartitions:        n.cfg.NumPartitions,
		DefaultReplicationFactor: n.cfg.DefaultReplicationFactor,
		UncleanLeaderElection:    n.cfg.UncleanLeaderElection,
		KRaftVersion:             n.disk.KRaftVersion,
		AutoLeaderRebalance:      n.cfg.AutoLeaderRebalance,
		LeaderImbalanceCheck:     time.Duration(n.cfg.LeaderImbalanceCheckS) * time.Second,
		Incarnation:              incarnation,
		Listeners:                listeners,
		Rand:                     rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(n.cfg.NodeID))),
		TopicIDs:                 crand.Reader,
		Report:                   n.reportTimedWork,
	})
}

// reportTimedWork logs how the controller's timed work ended. It runs on
// the controller's loop.
func (n *Node) reportTimedWork(work string, count int, err error) {
	switch {
	case err != nil:
		n.log.Debug().Err(err).Str("work", work).Msg("controller timed work not done")
	case work == "balance" && count > 0:
		n.log.Info().Int("partitions", count).Msg("moved leadership back to preferred replicas")
	}
}

// controllerTick is how often the controller's timed work runs: far below
// the 9 s broker session and quick enough to register promptly.
const controllerTick = 100 * time.Millisecond

// runController drives the controller's timed work until the node stops:
// the controller's own (Controller.Tick: fencing brokers whose session
// expired, preferred-leader balancing, the active controller's own
// registration), and, on a node that does not lead, sending this
// controller's registration to the leader once metadata.version allows it.
func (n *Node) runController() {
	t := time.NewTicker(controllerTick)
	defer t.Stop()
	var nextRegistration time.Time
	for {
		select {
		case <-n.done:
			return
		case <-n.stop:
			return
		case <-t.C:
		}
		n.ctl.Tick()
		if time.Now().After(nextRegistration) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := n.registerWithLeader(ctx); err != nil {
				n.log.Debug().Err(err).Msg("controller registration not done yet")
				nextRegistration = time.Now().Add(time.Second)
			}
			cancel()
		}
	}
}

// registerWithLeader makes sure the image holds this controller's
// registration by sending ControllerRegistration to the active controller,
// as Apache controllers do. The active controller writes its own
// (Controller.Tick).
func (n *Node) registerWithLeader(ctx context.Context) error {
	req := n.ctl.SelfRegistration()
	if n.ctl.MetadataVersion() < controller.MVControllerRegistration || n.ctl.ControllerRegistered(req.ControllerID, req.IncarnationID) {
		return nil
	}
	st := n.Status()
	if st.LeaderID < 0 {
		return errors.New("no leader known")
	}
	if st.Role == quorum.RoleLeader {
		return nil
	}
	var addr string
	for _, c := range n.Controllers(n.cfg.ControllerListenerName[0]) {
		if c.NodeID == st.LeaderID {
			addr = net.JoinHostPort(c.Host, fmt.Sprint(c.Port))
		}
	}
	if addr == "" {
		return fmt.Errorf("no endpoint for leader %d", st.LeaderID)
	}
	resp, err := oneRequest(ctx, addr, req, fmt.Sprintf("controller-registration-%d", n.cfg.NodeID))
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.ControllerRegistrationResponse).ErrorCode; code != 0 {
		return kerr.ErrorForCode(code)
	}
	return nil
}

// oneRequest sends one request on a fresh connection and reads its answer.
func oneRequest(ctx context.Context, addr string, req kmsg.Request, clientID string) (kmsg.Response, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	frame := protocol.AppendFrame(nil, req.AppendTo(protocol.AppendRequestHeader(nil, req, 1, clientID)))
	if _, err := c.Write(frame); err != nil {
		return nil, err
	}
	in, err := protocol.ReadFrame(c, 1<<20)
	if err != nil {
		return nil, err
	}
	_, resp, err := protocol.ParseResponse(in, req)
	return resp, err
}

// controllerOf returns the controller behind the backend, or nil when the
// backend has none (unit tests of the server alone).
func (s *Server) controllerOf() *controller.Controller {
	if b, ok := s.backend.(interface {
		Controller() *controller.Controller
	}); ok {
		return b.Controller()
	}
	return nil
}

// opContext bounds a controller operation by the request's own timeout when
// it has one, else by a default, and by the connection's life.
func opContext(r *Request, timeoutMs int32) (context.Context, context.CancelFunc) {
	d := 30 * time.Second
	if timeoutMs > 0 {
		d = time.Duration(timeoutMs) * time.Millisecond
	}
	return context.WithTimeout(r.Ctx, d)
}

// errNoController answers requests when the node has no controller.
var errNoController = controller.ErrNotController
