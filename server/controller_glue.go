package server

// Glue between the node (quorum loop) and the controller's operations: the
// Quorum the controller proposes through, the controller's background work
// (fencing brokers whose session expired, registering this controller), and
// the helpers the controller-API handlers share.

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/protocol"
	"github.com/kraftd/kraftd/quorum"
)

// nodeQuorum is the controller's view of the node.
type nodeQuorum struct{ n *Node }

// Append hands the records to the quorum loop, which takes proposals in the
// order they arrive, and reports their fate from a goroutine of their own,
// so the controller need not wait for the commit to build the next
// operation.
func (q nodeQuorum) Append(ctx context.Context, epoch int32, records []metadata.Record, stamp func(int64), done func(int64, error)) error {
	settle := func(first int64, err error) {
		if errors.Is(err, ErrNotController) || errors.Is(err, ErrStopped) {
			err = controller.ErrNotController
		}
		// The controller may be waiting on the loop for its next write
		// while this runs: never make the loop wait for the controller.
		go done(first, err)
	}
	if err := q.n.runner.Propose(ctx, &node.Proposal{Records: records, Epoch: epoch, Stamp: stamp, Done: settle}); err != nil {
		return err
	}
	return nil
}

func (q nodeQuorum) Leader() (int32, bool) {
	st := q.n.Status()
	return st.Epoch, st.Role == quorum.RoleLeader
}

// attachController gives the controller its quorum and settings.
func (n *Node) attachController() {
	var incarnation [16]byte
	_, _ = crand.Read(incarnation[:])
	var listeners []controller.Listener
	for _, e := range n.cfg.ControllerEndpoints() {
		listeners = append(listeners, controller.Listener{Name: e.Name, Host: e.Host, Port: e.Port})
	}
	n.ctl.Activate(nodeQuorum{n}, controller.Settings{
		NodeID:                   n.cfg.NodeID,
		ClusterID:                n.disk.Meta.ClusterID,
		SessionTimeout:           time.Duration(n.cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		DefaultPartitions:        n.cfg.NumPartitions,
		DefaultReplicationFactor: n.cfg.DefaultReplicationFactor,
		UncleanLeaderElection:    n.cfg.UncleanLeaderElection,
		KRaftVersion:             n.disk.KRaftVersion,
		Incarnation:              incarnation,
		Listeners:                listeners,
		Rand:                     rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(n.cfg.NodeID))),
	})
}

// controllerTick is how often the controller's background work runs: far
// below the 9 s broker session and quick enough to register promptly.
const controllerTick = 100 * time.Millisecond

// runController does the controller's timed work until the node stops: on
// the active controller, fence brokers whose session expired and, every
// leader.imbalance.check.interval.seconds, move leadership back to
// preferred replicas; on every node, register this controller once
// metadata.version allows it.
func (n *Node) runController() {
	t := time.NewTicker(controllerTick)
	defer t.Stop()
	var nextRegistration time.Time
	balanceEvery := time.Duration(n.cfg.LeaderImbalanceCheckS) * time.Second
	nextBalance := time.Now().Add(balanceEvery)
	for {
		select {
		case <-n.runner.Done():
			return
		case <-n.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for {
			fenced, err := n.ctl.FenceStaleBrokers(ctx)
			if err != nil || !fenced {
				break
			}
		}
		if n.cfg.AutoLeaderRebalance && time.Now().After(nextBalance) && n.ctl.IsActive() {
			nextBalance = time.Now().Add(balanceEvery)
			if moved, err := n.ctl.BalanceLeaders(ctx); err != nil {
				n.log.Debug().Err(err).Msg("preferred-leader balancing not done")
			} else if moved > 0 {
				n.log.Info().Int("partitions", moved).Msg("moved leadership back to preferred replicas")
			}
		}
		if time.Now().After(nextRegistration) {
			if err := n.registerSelf(ctx); err != nil {
				n.log.Debug().Err(err).Msg("controller registration not done yet")
				nextRegistration = time.Now().Add(time.Second)
			}
		}
		cancel()
	}
}

// registerSelf makes sure the image holds this controller's registration:
// the active controller writes it itself, the others send
// ControllerRegistration to the active controller, as Apache controllers do.
func (n *Node) registerSelf(ctx context.Context) error {
	req := n.ctl.SelfRegistration()
	if n.ctl.MetadataVersion() < controller.MVControllerRegistration || n.ctl.ControllerRegistered(req.ControllerID, req.IncarnationID) {
		return nil
	}
	st := n.Status()
	if st.LeaderID < 0 {
		return errors.New("no leader known")
	}
	if st.Role == quorum.RoleLeader {
		return n.ctl.RegisterController(ctx, req)
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
