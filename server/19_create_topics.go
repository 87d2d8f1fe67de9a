package server

// CreateTopics: v2-7
//
// Version notes:
//   - v0-1 were removed in Apache 4.0.
//   - v5: flexible; the result carries NumPartitions, ReplicationFactor and
//     the topic's effective configs.
//   - v7: TopicId in the result.
//
// Brokers forward it inside an Envelope. Replicas are striped over racks
// and brokers; manual assignments, configs and validate-only are honoured.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

func init() { regKey(19, 2, 7, (*Server).handleCreateTopics) }

func (s *Server) handleCreateTopics(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	refused := s.authorizeCreateTopics(r, req)
	err := errNoController
	var resp *kmsg.CreateTopicsResponse
	if ctl := s.controllerOf(); ctl != nil {
		ctx, cancel := opContext(r, req.TimeoutMillis)
		defer cancel()
		resp, err = ctl.CreateTopics(ctx, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.CreateTopicsResponse)
		code, msg := controller.ErrorCode(err)
		for _, t := range req.Topics {
			res := kmsg.NewCreateTopicsResponseTopic()
			res.Topic, res.ErrorCode, res.ErrorMessage = t.Topic, code, msg
			res.NumPartitions, res.ReplicationFactor = -1, -1
			resp.Topics = append(resp.Topics, res)
		}
	}
	s.finishCreateTopics(r, resp, refused)
	return resp, nil
}
