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
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(37, 0, 3, (*Server).handleCreatePartitions,
		accessRule{name: "CreatePartitions", items: "ALTER on each TOPIC"})
}

func (s *Server) handleCreatePartitions(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	refused := s.authorizeCreatePartitions(r, req)
	err := errNoController
	var resp *kmsg.CreatePartitionsResponse
	if ctl := s.backend.Controller(); ctl != nil {
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

// authorizeCreatePartitions needs ALTER on each topic.
func (s *Server) authorizeCreatePartitions(r *Request, req *kmsg.CreatePartitionsRequest) []kmsg.CreatePartitionsResponseTopic {
	if s.authorizer == nil {
		return nil
	}
	n := counts(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic })
	var refused []kmsg.CreatePartitionsResponseTopic
	req.Topics = slices.DeleteFunc(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool {
		if n[t.Topic] > 1 || s.allowed(r, authz.OpAlter, authz.ResourceTopic, t.Topic) {
			return false
		}
		res := kmsg.NewCreatePartitionsResponseTopic()
		res.Topic, res.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		res.ErrorMessage = refusalMessage(res.ErrorCode)
		refused = append(refused, res)
		return true
	})
	return refused
}
