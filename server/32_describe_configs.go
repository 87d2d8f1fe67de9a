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
)

func init() { regKey(32, 1, 4, (*Server).handleDescribeConfigs) }

func (s *Server) handleDescribeConfigs(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	// Refused resources, this node's loggers and its own configuration are
	// answered here, the rest from the metadata image.
	answered := s.authorizeDescribeConfigs(r, req)
	ctl := s.controllerOf()
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
