package server

// ListPartitionReassignments: v0
//
// Version notes:
//   - v0: flexible from the start.
//
// Read from the committed image, so any controller answers, as Apache's
// reads at its last stable offset (kafka-reassign-partitions --verify and
// --list).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
)

func init() {
	regKey(46, 0, 0, (*Server).handleListPartitionReassignments,
		accessRule{name: "ListPartitionReassignments", cluster: authz.OpDescribe})
}

func (s *Server) handleListPartitionReassignments(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListPartitionReassignmentsRequest)
	ctl := s.backend.Controller()
	if ctl == nil {
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	return ctl.ListPartitionReassignments(req), nil
}
