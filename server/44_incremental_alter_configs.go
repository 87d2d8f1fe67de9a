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

	"github.com/kraftd/kraftd/controller"
)

func init() { regKey(44, 0, 1, (*Server).handleIncrementalAlterConfigs) }

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
	if ctl := s.controllerOf(); ctl != nil {
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
