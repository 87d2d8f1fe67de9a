package server

// BrokerRegistration: v0-4
//
// Version notes:
//   - v1: IsMigratingZkBroker (always refused: kraftd has no ZooKeeper mode).
//   - v2: LogDirs, required once metadata.version >= 3.7-IV2.
//   - v3: PreviousBrokerEpoch, for clean-shutdown detection: a broker that
//     comes back with the epoch it last had shut down cleanly.
//   - v4: features whose minimum is 0 may be listed.
//
// Only the active controller answers; others say NOT_CONTROLLER. The new
// broker epoch is the offset of the first record written for it.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(62, 0, 4, (*Server).handleBrokerRegistration,
		accessRule{name: "BrokerRegistration", cluster: authz.OpClusterAction})
}

func (s *Server) handleBrokerRegistration(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.BrokerRegistrationRequest)
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = -1
	ctl := s.backend.Controller()
	if ctl == nil {
		resp.ErrorCode, _ = controller.ErrorCode(errNoController)
		return resp, nil
	}
	ctx, cancel := opContext(r, 0)
	defer cancel()
	epoch, err := ctl.RegisterBroker(ctx, req)
	if err != nil {
		resp.ErrorCode, _ = controller.ErrorCode(err)
		s.log.Info().Err(err).Int32("broker", req.BrokerID).Msg("broker registration refused")
		return resp, nil
	}
	resp.BrokerEpoch = epoch
	return resp, nil
}
