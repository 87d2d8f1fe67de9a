package server

// UnregisterController: v0
//
// Removes the registration of a controller that left the voter set
// (KIP-1312, Apache 4.4, metadata.version 4.4-IV2), so that DescribeCluster
// and feature checks stop counting it. The active controller's own id is
// refused first, as Apache words it ("Controller cannot unregister itself
// while it is active."), then any other voter (kraftd's rule; Apache has
// none), both with INVALID_REQUEST; an older metadata.version with
// UNSUPPORTED_VERSION, an unknown id with CONTROLLER_ID_NOT_REGISTERED.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/quorum"
)

func init() {
	regKey(94, 0, 0, (*Server).handleUnregisterController,
		accessRule{name: "UnregisterController", cluster: authz.OpAlter})
}

func (s *Server) handleUnregisterController(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UnregisterControllerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterControllerResponse)
	err := errNoController
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		err = ctl.UnregisterController(ctx, req.ControllerID, s.isVoter)
	}
	resp.ErrorCode, resp.ErrorMessage = controller.ErrorCode(err)
	return resp, nil
}

// isVoter reports whether id is in the quorum's current voter set.
func (s *Server) isVoter(id int32) bool {
	return slices.ContainsFunc(s.backend.Status().Voters, func(v quorum.Voter) bool { return v.ID == id })
}
