package server

// DescribeConfigs: v1-4
//
// Version notes:
//   - v0 was removed in Apache 4.0.
//   - v1: IncludeSynonyms and each config's Source.
//   - v3: ConfigType and Documentation (kraftd sends no documentation).
//   - v4: flexible.
//
// Answered from this node's committed image (any controller, like Apache):
// topic configs with their schema defaults, and every key of a group or
// client metrics subscription, set or default. BROKER is this node's own
// configuration, every key of the KafkaConfig of the cluster's oldest
// release line (describe_own_config.go); BROKER_LOGGER its own log level
// (broker_logger.go).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
)

func init() {
	regKey(32, 1, 4, (*Server).handleDescribeConfigs,
		accessRule{name: "DescribeConfigs", items: "DESCRIBE_CONFIGS on CLUSTER for BROKER, BROKER_LOGGER and CLIENT_METRICS, on the TOPIC or GROUP for those"})
}

func (s *Server) handleDescribeConfigs(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	// Refused resources, this node's loggers and its own configuration are
	// answered here, the rest from the metadata image.
	answered := s.authorizeDescribeConfigs(r, req)
	ctl := s.backend.Controller()
	req.Resources = slices.DeleteFunc(req.Resources, func(res kmsg.DescribeConfigsRequestResource) bool {
		switch {
		case int8(res.ResourceType) == configBrokerLogger:
			answered = append(answered, s.describeLoggers(res))
		case res.ResourceType == kmsg.ConfigResourceTypeBroker && ctl != nil:
			answered = append(answered, s.describeOwnConfig(req, res, ctl))
		default:
			return false
		}
		return true
	})
	if ctl == nil {
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, res := range req.Resources {
			out := kmsg.NewDescribeConfigsResponseResource()
			out.ResourceType, out.ResourceName, out.ErrorCode = res.ResourceType, res.ResourceName, kerr.NotController.Code
			resp.Resources = append(resp.Resources, out)
		}
		resp.Resources = append(resp.Resources, answered...)
		return resp, nil
	}
	resp := ctl.DescribeConfigs(req)
	resp.Resources = append(resp.Resources, answered...)
	return resp, nil
}

// authorizeDescribeConfigs removes the resources the principal may not
// describe (configAccess) and returns their refusals.
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
