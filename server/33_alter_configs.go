package server

// AlterConfigs: v0-2
//
// Version notes:
//   - v1: same as v0 (throttling).
//   - v2: flexible.
//
// The legacy, non-incremental form: the configs given replace every
// dynamic config of the resource.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(33, 0, 2, (*Server).handleAlterConfigs,
		accessRule{name: "AlterConfigs", items: "ALTER_CONFIGS on CLUSTER for BROKER and CLIENT_METRICS, on the TOPIC or GROUP for those"})
}

func (s *Server) handleAlterConfigs(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	refused := s.authorizeAlterConfigs(r, req)
	err := errNoController
	var resp *kmsg.AlterConfigsResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.AlterConfigs(ctx, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.AlterConfigsResponse)
		code, msg := controller.ErrorCode(err)
		for _, res := range req.Resources {
			out := kmsg.NewAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName, out.ErrorCode, out.ErrorMessage = res.ResourceType, res.ResourceName, code, msg
			resp.Resources = append(resp.Resources, out)
		}
	}
	resp.Resources = append(resp.Resources, refused...)
	return resp, nil
}

// authorizeAlterConfigs removes the resources the principal may not alter
// (configAccess) and returns their refusals; a duplicated resource is left
// to the controller.
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
