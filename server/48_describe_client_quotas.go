package server

// DescribeClientQuotas: v0-1
//
// Version notes:
//   - v1: flexible.
//
// Answered from this node's committed image. Apache's controller does not
// serve it (a broker answers it from its own image, so nothing forwards
// it); kraftd does, for a client that asks the controller directly.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(48, 0, 1, (*Server).handleDescribeClientQuotas) }

func (s *Server) handleDescribeClientQuotas(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClientQuotasRequest)
	ctl := s.controllerOf()
	if ctl == nil {
		resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	return ctl.DescribeClientQuotas(req), nil
}
