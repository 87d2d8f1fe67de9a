package server

// AlterClientQuotas: v0-1
//
// Version notes:
//   - v1: flexible.
//
// Sets and removes client quotas (kafka-client-quotas.sh --alter,
// kafka-configs.sh --entity-type users|clients|ips --alter) as
// ClientQuotaRecords; ValidateOnly checks and writes nothing. Brokers
// forward it inside an Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(49, 0, 1, (*Server).handleAlterClientQuotas,
		accessRule{name: "AlterClientQuotas", cluster: authz.OpAlterConfigs, refuse: refuseAlterClientQuotas})
}

func (s *Server) handleAlterClientQuotas(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	err := errNoController
	var resp *kmsg.AlterClientQuotasResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.AlterClientQuotas(ctx, req)
	}
	if err != nil {
		// The operation failed as a whole: every entry carries its error.
		resp = req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		code, msg := controller.ErrorCode(err)
		for _, e := range req.Entries {
			out := kmsg.NewAlterClientQuotasResponseEntry()
			out.ErrorCode, out.ErrorMessage = code, msg
			for _, d := range e.Entity {
				out.Entity = append(out.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: d.Type, Name: d.Name})
			}
			resp.Entries = append(resp.Entries, out)
		}
	}
	return resp, nil
}

// refuseAlterClientQuotas answers a request refused whole: one result per
// entry, naming its entity.
func refuseAlterClientQuotas(r kmsg.Request, code int16, msg *string) kmsg.Response {
	req := r.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range req.Entries {
		res := kmsg.NewAlterClientQuotasResponseEntry()
		res.ErrorCode, res.ErrorMessage = code, msg
		for _, en := range e.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = en.Type, en.Name
			res.Entity = append(res.Entity, re)
		}
		resp.Entries = append(resp.Entries, res)
	}
	return resp
}
