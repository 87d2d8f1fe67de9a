package server

// DeleteTopics: v1-6
//
// Version notes:
//   - v0 was removed in Apache 4.0.
//   - v4: flexible.
//   - v5: ErrorMessage in each result.
//   - v6: topics by name or by id (Topics replaces TopicNames).
//
// Brokers forward it inside an Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

func init() { regKey(20, 1, 6, (*Server).handleDeleteTopics) }

func (s *Server) handleDeleteTopics(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	refused := s.authorizeDeleteTopics(r, req)
	err := errNoController
	var resp *kmsg.DeleteTopicsResponse
	if ctl := s.controllerOf(); ctl != nil {
		ctx, cancel := opContext(r, req.TimeoutMillis)
		defer cancel()
		resp, err = ctl.DeleteTopics(ctx, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		code, msg := controller.ErrorCode(err)
		if req.Version < 5 {
			msg = nil
		}
		for _, n := range req.TopicNames {
			res := kmsg.NewDeleteTopicsResponseTopic()
			res.Topic, res.ErrorCode, res.ErrorMessage = &n, code, msg
			resp.Topics = append(resp.Topics, res)
		}
		for _, t := range req.Topics {
			res := kmsg.NewDeleteTopicsResponseTopic()
			res.Topic, res.TopicID, res.ErrorCode, res.ErrorMessage = t.Topic, t.TopicID, code, msg
			resp.Topics = append(resp.Topics, res)
		}
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}
