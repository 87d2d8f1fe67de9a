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
	out, _ := s.startBrokerHeartbeat(r)
	return out, nil
}

// startBrokerHeartbeat gives the controller the heartbeat and waits for
// its answer on the connection's goroutine. The node's loop answers one
// that writes nothing while no write is pending, nearly every heartbeat
// of a steady fleet, as soon as it takes it: a goroutine of its own to
// wait would cost more than that wait (a third more CPU a heartbeat in
// BenchmarkBrokerHeartbeatFleet). One that writes waits for its commit,
// which holds up only this connection: a broker sends its heartbeats one
// at a time, on a channel of their own. The controller answers every
// heartbeat it took, once it commits or fails (a lost leadership, a
// stop), so the wait ends without a timer.
func (s *Server) startBrokerHeartbeat(r *Request) (kmsg.Response, handlerFunc) {
	req := r.Body.(*kmsg.BrokerHeartbeatRequest)
	ctl := s.backend.Controller()
	if ctl == nil {
		return heartbeatAnswer(req, nil, errNoController), nil
	}
	resp, err := ctl.BrokerHeartbeat(r.Ctx, req)
	return heartbeatAnswer(req, resp, err), nil
}

// heartbeatAnswer is the controller's answer, or an error code.
func heartbeatAnswer(req *kmsg.BrokerHeartbeatRequest, resp *kmsg.BrokerHeartbeatResponse, err error) *kmsg.BrokerHeartbeatResponse {
	if err != nil {
		resp = req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode, _ = controller.ErrorCode(err)
	}
	return resp
}
