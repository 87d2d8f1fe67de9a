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

	"github.com/kraftd/kraftd/controller"
)

func init() { regKey(63, 0, 2, (*Server).handleBrokerHeartbeat) }

func (s *Server) handleBrokerHeartbeat(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.BrokerHeartbeatRequest)
	ctl := s.controllerOf()
	err := errNoController
	var resp *kmsg.BrokerHeartbeatResponse
	if ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.BrokerHeartbeat(ctx, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode, _ = controller.ErrorCode(err)
	}
	return resp, nil
}
