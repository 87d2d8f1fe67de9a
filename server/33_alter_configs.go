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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

func init() { regKey(33, 0, 2, (*Server).handleAlterConfigs) }

func (s *Server) handleAlterConfigs(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	refused := s.authorizeAlterConfigs(r, req)
	err := errNoController
	var resp *kmsg.AlterConfigsResponse
	if ctl := s.controllerOf(); ctl != nil {
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
