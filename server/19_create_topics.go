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
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(19, 2, 7, (*Server).handleCreateTopics,
		accessRule{name: "CreateTopics", items: "CREATE on CLUSTER, else CREATE on each TOPIC; DESCRIBE_CONFIGS on each TOPIC for its configs"})
}

func (s *Server) handleCreateTopics(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	refused := s.authorizeCreateTopics(r, req)
	err := errNoController
	var resp *kmsg.CreateTopicsResponse
	if ctl := s.backend.Controller(); ctl != nil {
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

// authorizeCreateTopics needs CREATE on the cluster, else on each topic.
func (s *Server) authorizeCreateTopics(r *Request, req *kmsg.CreateTopicsRequest) []kmsg.CreateTopicsResponseTopic {
	if s.authorizer == nil || s.allowedQuietly(r, authz.OpCreate, authz.ResourceCluster, authz.ClusterName) {
		return nil
	}
	n := counts(req.Topics, func(t kmsg.CreateTopicsRequestTopic) string { return t.Topic })
	var refused []kmsg.CreateTopicsResponseTopic
	req.Topics = slices.DeleteFunc(req.Topics, func(t kmsg.CreateTopicsRequestTopic) bool {
		if n[t.Topic] > 1 || t.Topic == "__cluster_metadata" || s.allowed(r, authz.OpCreate, authz.ResourceTopic, t.Topic) {
			return false
		}
		res := kmsg.NewCreateTopicsResponseTopic()
		res.Topic, res.ErrorCode, res.NumPartitions, res.ReplicationFactor = t.Topic, kerr.TopicAuthorizationFailed.Code, -1, -1
		msg := "Authorization failed."
		res.ErrorMessage = &msg
		refused = append(refused, res)
		return true
	})
	return refused
}

// finishCreateTopics appends the refusals and hides the configs of the
// topics the principal may not DESCRIBE_CONFIGS, as Apache's controller
// does (TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED, no sizes).
func (s *Server) finishCreateTopics(r *Request, resp *kmsg.CreateTopicsResponse, refused []kmsg.CreateTopicsResponseTopic) {
	if s.authorizer == nil {
		return
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.ErrorCode != 0 || s.allowedQuietly(r, authz.OpDescribeConfigs, authz.ResourceTopic, t.Topic) {
			continue
		}
		t.Configs, t.NumPartitions, t.ReplicationFactor = nil, -1, -1
		t.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
	}
	resp.Topics = append(resp.Topics, refused...)
}
