package server

// AlterPartition: v2-3
//
// Version notes:
//   - v0-1 were removed in Apache 4.0 (topic names instead of ids).
//   - v2: TopicId.
//   - v3: NewIsrWithEpochs: each ISR member with its broker epoch, so a
//     broker that restarted (new epoch) cannot rejoin on stale state.
//
// Partition leaders send it to grow or shrink their ISR.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(56, 2, 3, (*Server).handleAlterPartition,
		accessRule{name: "AlterPartition", cluster: authz.OpClusterAction})
}

func (s *Server) handleAlterPartition(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterPartitionRequest)
	err := errNoController
	var resp *kmsg.AlterPartitionResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.AlterPartition(ctx, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode, _ = controller.ErrorCode(err)
	}
	return resp, nil
}
