package server

// BrokerHeartbeat: v0-2
//
// Version notes:
//   - v1: OfflineLogDirs (tag 0): from metadata.version 3.7-IV2, replicas
//     in a newly failed directory leave ISRs and leadership and the
//     registration drops the directory (ignored below that version).
//   - v2: CordonedLogDirs (tag 1, KIP-1066): from metadata.version 4.3-IV0
//     a changed list is recorded (BrokerRegistrationChangeRecord v3) and a
//     broker whose every directory is cordoned takes no new replicas.
//
// A heartbeat keeps the broker's session alive; it also unfences a broker
// that has caught up, fences one that asks, and runs controlled shutdown.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(63, 0, 2, (*Server).handleBrokerHeartbeat,
		accessRule{name: "BrokerHeartbeat", cluster: authz.OpClusterAction})
	regStart(63, (*Server).startBrokerHeartbeat)
}

func (s *Server) handleBrokerHeartbeat(r *Request) (kmsg.Response, error) {
	out, rest := s.startBrokerHeartbeat(r)
	if out != nil {
		return out, nil
	}
	return rest(s, r)
}

// startBrokerHeartbeat gives the controller the heartbeat from the
// connection's goroutine. Its answer, which comes from the node's loop
// (at once for one that writes nothing while no write is pending, else
// once a commit settles it), is waited for on a goroutine of its own; one
// refused at once (not the controller) is answered without that hand-off.
func (s *Server) startBrokerHeartbeat(r *Request) (kmsg.Response, handlerFunc) {
	req := r.Body.(*kmsg.BrokerHeartbeatRequest)
	ctl := s.backend.Controller()
	if ctl == nil {
		return heartbeatAnswer(req, nil, errNoController), nil
	}
	a := ctl.StartBrokerHeartbeat(req)
	if a.Ready() {
		resp, err := a.Wait(context.Background())
		return heartbeatAnswer(req, resp, err), nil
	}
	return nil, func(s *Server, r *Request) (kmsg.Response, error) {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err := a.Wait(ctx)
		return heartbeatAnswer(req, resp, err), nil
	}
}

// heartbeatAnswer is the controller's answer, or an error code.
func heartbeatAnswer(req *kmsg.BrokerHeartbeatRequest, resp *kmsg.BrokerHeartbeatResponse, err error) *kmsg.BrokerHeartbeatResponse {
	if err != nil {
		resp = req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode, _ = controller.ErrorCode(err)
	}
	return resp
}
