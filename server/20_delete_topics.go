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
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(20, 1, 6, (*Server).handleDeleteTopics,
		accessRule{name: "DeleteTopics", items: "DELETE on CLUSTER, else DESCRIBE and DELETE on each TOPIC"})
}

func (s *Server) handleDeleteTopics(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	refused := s.authorizeDeleteTopics(r, req)
	err := errNoController
	var resp *kmsg.DeleteTopicsResponse
	if ctl := s.backend.Controller(); ctl != nil {
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

// authorizeDeleteTopics needs DELETE on the cluster, else DESCRIBE and
// DELETE on each topic; a topic named by id whose name the principal may
// not DESCRIBE is refused without its name, so that ids reveal nothing.
func (s *Server) authorizeDeleteTopics(r *Request, req *kmsg.DeleteTopicsRequest) []kmsg.DeleteTopicsResponseTopic {
	if s.authorizer == nil || s.allowedQuietly(r, authz.OpDelete, authz.ResourceCluster, authz.ClusterName) {
		return nil
	}
	var refused []kmsg.DeleteTopicsResponseTopic
	refuse := func(name *string, id [16]byte) {
		res := kmsg.NewDeleteTopicsResponseTopic()
		res.Topic, res.TopicID, res.ErrorCode = name, id, kerr.TopicAuthorizationFailed.Code
		if req.Version >= 5 {
			res.ErrorMessage = refusalMessage(res.ErrorCode)
		}
		refused = append(refused, res)
	}
	// may reports whether the topic may be deleted, refusing it if not.
	may := func(name string, id [16]byte, byID bool) bool {
		describe := s.allowed(r, authz.OpDescribe, authz.ResourceTopic, name)
		if describe && s.allowed(r, authz.OpDelete, authz.ResourceTopic, name) {
			return true
		}
		switch {
		case describe || !byID:
			refuse(&name, id)
		default:
			refuse(nil, id)
		}
		return false
	}
	req.TopicNames = slices.DeleteFunc(req.TopicNames, func(n string) bool { return !may(n, [16]byte{}, false) })
	ctl := s.backend.Controller()
	req.Topics = slices.DeleteFunc(req.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool {
		if t.Topic != nil && *t.Topic != "" {
			return !may(*t.Topic, [16]byte{}, false)
		}
		if ctl == nil {
			return false
		}
		name, known := ctl.TopicName(t.TopicID)
		return known && !may(name, t.TopicID, true) // an unknown id is the controller's to answer
	})
	return refused
}
