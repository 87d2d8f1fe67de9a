package server

// ControllerRegistration: v0
//
// A controller registers its listeners and supported features with the
// active controller (KIP-919); the RegisterControllerRecord it leads to is
// what DescribeCluster lists. Needs metadata.version >= 3.7-IV0, otherwise
// UNSUPPORTED_VERSION.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(70, 0, 0, (*Server).handleControllerRegistration,
		accessRule{name: "ControllerRegistration", cluster: authz.OpClusterAction})
}

func (s *Server) handleControllerRegistration(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ControllerRegistrationRequest)
	resp := req.ResponseKind().(*kmsg.ControllerRegistrationResponse)
	err := errNoController
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		err = ctl.RegisterController(ctx, req)
	}
	resp.ErrorCode, resp.ErrorMessage = controller.ErrorCode(err)
	return resp, nil
}
