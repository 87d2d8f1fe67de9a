package server

// CreatePartitions: v0-3
//
// Version notes:
//   - v1: same as v0 (throttling behaviour changed).
//   - v2: flexible.
//   - v3: same as v2 (quota throttling, KIP-599).
//
// Brokers forward it inside an Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

func init() { regKey(37, 0, 3, (*Server).handleCreatePartitions) }

func (s *Server) handleCreatePartitions(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	refused := s.authorizeCreatePartitions(r, req)
	err := errNoController
	var resp *kmsg.CreatePartitionsResponse
	if ctl := s.controllerOf(); ctl != nil {
		ctx, cancel := opContext(r, req.TimeoutMillis)
		defer cancel()
		resp, err = ctl.CreatePartitions(ctx, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		code, msg := controller.ErrorCode(err)
		for _, t := range req.Topics {
			res := kmsg.NewCreatePartitionsResponseTopic()
			res.Topic, res.ErrorCode, res.ErrorMessage = t.Topic, code, msg
			resp.Topics = append(resp.Topics, res)
		}
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}
