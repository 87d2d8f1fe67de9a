package server

// IncrementalAlterConfigs: v0-1
//
// Version notes:
//   - v1: flexible.
//
// SET, DELETE, APPEND and SUBTRACT (the last two for list configs) on
// topics and brokers ("" is the cluster-wide default); SET and DELETE on
// groups and client metrics subscriptions, checked whole with the rules of
// the cluster's release line; SET of this node's own log level
// (BROKER_LOGGER, broker_logger.go). Brokers handle BROKER_LOGGER
// themselves and forward the rest inside an Envelope.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(44, 0, 1, (*Server).handleIncrementalAlterConfigs,
		accessRule{name: "IncrementalAlterConfigs", items: "ALTER_CONFIGS on CLUSTER for BROKER and CLIENT_METRICS, on the TOPIC or GROUP for those; CLUSTER_ACTION on CLUSTER for BROKER_LOGGER"})
}

func (s *Server) handleIncrementalAlterConfigs(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	// Refused resources and this node's loggers are answered here, the
	// rest by the controller.
	answered := s.authorizeIncrementalAlterConfigs(r, req)
	req.Resources = slices.DeleteFunc(req.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) bool {
		if int8(res.ResourceType) != configBrokerLogger {
			return false
		}
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
		out.ErrorCode, out.ErrorMessage = s.alterLoggers(res, req.ValidateOnly)
		answered = append(answered, out)
		return true
	})
	if len(req.Resources) == 0 {
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		resp.Resources = answered
		return resp, nil
	}
	err := errNoController
	var resp *kmsg.IncrementalAlterConfigsResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.IncrementalAlterConfigs(ctx, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		code, msg := controller.ErrorCode(err)
		for _, res := range req.Resources {
			out := kmsg.NewIncrementalAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName, out.ErrorCode, out.ErrorMessage = res.ResourceType, res.ResourceName, code, msg
			resp.Resources = append(resp.Resources, out)
		}
	}
	resp.Resources = append(resp.Resources, answered...)
	return resp, nil
}

// authorizeIncrementalAlterConfigs removes the resources the principal may
// not alter (configAccess; CLUSTER_ACTION for BROKER_LOGGER) and returns
// their refusals; a duplicated resource is left to the controller.
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
