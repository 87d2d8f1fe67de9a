package server

// AssignReplicasToDirs: v0
//
// A broker with several log directories tells the controller which one
// holds each replica the controller left UNASSIGNED (metadata.version
// 3.7-IV2 and later; below it the answer is UNSUPPORTED_VERSION). Sent
// straight to the controller, never forwarded.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(73, 0, 0, (*Server).handleAssignReplicasToDirs,
		accessRule{name: "AssignReplicasToDirs", cluster: authz.OpClusterAction})
}

func (s *Server) handleAssignReplicasToDirs(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AssignReplicasToDirsRequest)
	err := errNoController
	var resp *kmsg.AssignReplicasToDirsResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.AssignReplicasToDirs(ctx, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
		resp.ErrorCode, _ = controller.ErrorCode(err)
	}
	return resp, nil
}
