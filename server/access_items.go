package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
)

// The per-item checks of accessRules' "items" rows. Each authorizeX
// removes from the request the items its principal may not touch and
// returns their refusals, which the handler appends to what the
// controller answers for the rest (Apache likewise answers refused items
// beside the others). With no authorizer they remove nothing.

// authorizationMessage is the text Apache's Errors give each refusal.
var authorizationMessage = map[int16]string{
	kerr.ClusterAuthorizationFailed.Code: "Cluster authorization failed.",
	kerr.TopicAuthorizationFailed.Code:   "Topic authorization failed.",
	kerr.GroupAuthorizationFailed.Code:   "Group authorization failed.",
}

// refusalMessage is the message of a refusal with code: none for
// UNKNOWN_SERVER_ERROR, whose message Apache's ApiError.fromThrowable
// never sends (it could leak internals).
func refusalMessage(code int16) *string {
	if code == kerr.UnknownServerError.Code {
		return nil
	}
	msg, ok := authorizationMessage[code]
	if !ok {
		msg = kerr.ErrorForCode(code).Error()
	}
	return &msg
}

// allowedQuietly is allowed without the log line, for the checks Apache
// makes with logIfDenied false (a cluster-wide grant tried before the
// per-topic one, the configs a CreateTopics answer may show).
func (s *Server) allowedQuietly(r *Request, op authz.Operation, t authz.ResourceType, name string) bool {
	return s.decide(r, op, t, name, false).Allowed
}

// counts is how often each name occurs: a duplicated name is left to the
// controller, which refuses it as INVALID_REQUEST whatever the ACLs say,
// as Apache checks duplicates first.
func counts[T any](items []T, name func(T) string) map[string]int {
	n := map[string]int{}
	for _, it := range items {
		n[name(it)]++
	}
	return n
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
	ctl := s.controllerOf()
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

// Config resource types (ConfigResource.Type).
const (
	configTopic         int8 = 2
	configBroker        int8 = 4
	configBrokerLogger  int8 = 8
	configClientMetrics int8 = 16
	configGroup         int8 = 32
)

// configAccess is what altering (op ALTER_CONFIGS) or describing (op
// DESCRIBE_CONFIGS) a config resource needs, and the code of its refusal;
// ok is false for a type Apache does not check (the controller refuses
// it).
func configAccess(resType int8, name string, op authz.Operation) (t authz.ResourceType, resource string, code int16, ok bool) {
	switch resType {
	case configBroker, configClientMetrics:
		return authz.ResourceCluster, authz.ClusterName, kerr.ClusterAuthorizationFailed.Code, true
	case configBrokerLogger:
		if op == authz.OpDescribeConfigs {
			return authz.ResourceCluster, authz.ClusterName, kerr.ClusterAuthorizationFailed.Code, true
		}
	case configTopic:
		return authz.ResourceTopic, name, kerr.TopicAuthorizationFailed.Code, true
	case configGroup:
		return authz.ResourceGroup, name, kerr.GroupAuthorizationFailed.Code, true
	}
	return 0, "", 0, false
}

// configRefusal checks one config resource and returns the refusal's code,
// or 0 when it may go ahead. BROKER_LOGGER changes need CLUSTER_ACTION on
// IncrementalAlterConfigs.
func (s *Server) configRefusal(r *Request, resType int8, name string, op authz.Operation, incremental bool) int16 {
	if incremental && resType == configBrokerLogger {
		if s.allowed(r, authz.OpClusterAction, authz.ResourceCluster, authz.ClusterName) {
			return 0
		}
		return kerr.ClusterAuthorizationFailed.Code
	}
	t, resource, code, ok := configAccess(resType, name, op)
	if !ok || s.allowed(r, op, t, resource) {
		return 0
	}
	return code
}

type configKey struct {
	t    int8
	name string
}

func (s *Server) authorizeAlterConfigs(r *Request, req *kmsg.AlterConfigsRequest) []kmsg.AlterConfigsResponseResource {
	if s.authorizer == nil {
		return nil
	}
	n := map[configKey]int{}
	for _, res := range req.Resources {
		n[configKey{int8(res.ResourceType), res.ResourceName}]++
	}
	var refused []kmsg.AlterConfigsResponseResource
	req.Resources = slices.DeleteFunc(req.Resources, func(res kmsg.AlterConfigsRequestResource) bool {
		if n[configKey{int8(res.ResourceType), res.ResourceName}] > 1 {
			return false
		}
		code := s.configRefusal(r, int8(res.ResourceType), res.ResourceName, authz.OpAlterConfigs, false)
		if code == 0 {
			return false
		}
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName, out.ErrorCode, out.ErrorMessage = res.ResourceType, res.ResourceName, code, refusalMessage(code)
		refused = append(refused, out)
		return true
	})
	return refused
}

func (s *Server) authorizeIncrementalAlterConfigs(r *Request, req *kmsg.IncrementalAlterConfigsRequest) []kmsg.IncrementalAlterConfigsResponseResource {
	if s.authorizer == nil {
		return nil
	}
	n := map[configKey]int{}
	for _, res := range req.Resources {
		n[configKey{int8(res.ResourceType), res.ResourceName}]++
	}
	var refused []kmsg.IncrementalAlterConfigsResponseResource
	req.Resources = slices.DeleteFunc(req.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) bool {
		if n[configKey{int8(res.ResourceType), res.ResourceName}] > 1 {
			return false
		}
		code := s.configRefusal(r, int8(res.ResourceType), res.ResourceName, authz.OpAlterConfigs, true)
		if code == 0 {
			return false
		}
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName, out.ErrorCode, out.ErrorMessage = res.ResourceType, res.ResourceName, code, refusalMessage(code)
		refused = append(refused, out)
		return true
	})
	return refused
}

func (s *Server) authorizeDescribeConfigs(r *Request, req *kmsg.DescribeConfigsRequest) []kmsg.DescribeConfigsResponseResource {
	if s.authorizer == nil {
		return nil
	}
	var refused []kmsg.DescribeConfigsResponseResource
	req.Resources = slices.DeleteFunc(req.Resources, func(res kmsg.DescribeConfigsRequestResource) bool {
		code := s.configRefusal(r, int8(res.ResourceType), res.ResourceName, authz.OpDescribeConfigs, false)
		if code == 0 {
			return false
		}
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName, out.ErrorCode, out.ErrorMessage = res.ResourceType, res.ResourceName, code, refusalMessage(code)
		refused = append(refused, out)
		return true
	})
	return refused
}
