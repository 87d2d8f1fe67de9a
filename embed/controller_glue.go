package embed

// Glue between the node (quorum loop) and the controller's operations:
// the controller's settings, given to the node's seam (node/seam.go),
// which drives its core on the loop; this controller's registration with
// a leader.

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
	"github.com/kraftd/kraftd/protocol"
	"github.com/kraftd/kraftd/quorum"
)

// securityProtocolIDs are Apache's SecurityProtocol ids, as registration
// records carry them.
var securityProtocolIDs = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

// attachController gives the node's loop the controller's core, and the
// controller the loop to run its operations on.
func (n *Node) attachController() {
	var incarnation [16]byte
	_, _ = crand.Read(incarnation[:])
	var listeners []controller.Listener
	for _, e := range n.cfg.ControllerEndpoints() {
		listeners = append(listeners, controller.Listener{Name: e.Name, Host: e.Host, Port: e.Port,
			SecurityProtocol: securityProtocolIDs[n.cfg.ListenerProtocols[e.Name]]})
	}
	n.runner.Node().AttachController(n.ctl, controller.Settings{
		NodeID:                   n.cfg.NodeID,
		ClusterID:                n.disk.Meta.ClusterID,
		SessionTimeout:           time.Duration(n.cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		DefaultPartitions:        n.cfg.NumPartitions,
		DefaultReplicationFactor: n.cfg.DefaultReplicationFactor,
		UncleanLeaderElection:    n.cfg.UncleanLeaderElection,
		KRaftVersion:             n.runner.Status().KRaftVersion,
		AutoLeaderRebalance:      n.cfg.AutoLeaderRebalance,
		LeaderImbalanceCheck:     time.Duration(n.cfg.LeaderImbalanceCheckS) * time.Second,
		Incarnation:              incarnation,
		Listeners:                listeners,
		Rand:                     rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(n.cfg.NodeID))),
		TopicIDs:                 crand.Reader,
		Report:                   n.reportTimedWork,
		Tokens: controller.TokenSettings{Secret: n.cfg.Tokens.Secret, MaxLifetime: n.cfg.Tokens.MaxLifetime,
			Expiry: n.cfg.Tokens.Expiry, CheckEvery: n.cfg.Tokens.ExpiryCheck},
	})
	n.ctl.Serve(n.runner.Drive)
}

// reportTimedWork logs how the controller's timed work ended. It runs on
// the node's loop.
func (n *Node) reportTimedWork(work string, count int, err error) {
	switch {
	case err != nil:
		n.log.Debug().Err(err).Str("work", work).Msg("controller timed work not done")
	case work == "fence" && count > 0:
		n.timedOutHeartbeats.Add(int64(count))
	case work == "balance" && count > 0:
		n.log.Info().Int("partitions", count).Msg("moved leadership back to preferred replicas")
	}
}

// registrationPoll is how often a controller that does not lead looks
// whether the image holds its registration yet.
const registrationPoll = 100 * time.Millisecond

// runController sends, on a node that does not lead, this controller's
// registration to the leader once metadata.version allows it, until the
// node stops. (The controller's timed work runs on the node's loop.)
func (n *Node) runController() {
	t := time.NewTicker(registrationPoll)
	defer t.Stop()
	var nextRegistration time.Time
	for {
		select {
		case <-n.runner.Done():
			return
		case <-n.stop:
			return
		case <-t.C:
		}
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
// as Apache controllers do, when the core has one to send
// (controller.Core.RegistrationToSend). The active controller writes its
// own (controller.Core.Tick).
func (n *Node) registerWithLeader(ctx context.Context) error {
	req := n.ctl.RegistrationToSend()
	if req == nil {
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
