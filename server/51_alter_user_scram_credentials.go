package server

// AlterUserScramCredentials: v0
//
// Version notes:
//   - v0: flexible.
//
// Upserts and deletes SCRAM credentials (kafka-configs.sh --entity-type
// users --alter --add-config 'SCRAM-SHA-512=[password=...]'). Brokers
// forward it inside an Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(51, 0, 0, (*Server).handleAlterUserScramCredentials,
		accessRule{name: "AlterUserScramCredentials", cluster: authz.OpAlter, refuse: refuseAlterUserScram})
}

func (s *Server) handleAlterUserScramCredentials(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	err := errNoController
	var resp *kmsg.AlterUserSCRAMCredentialsResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.AlterUserScramCredentials(ctx, req)
	}
	if err != nil {
		// The operation failed as a whole: every user named carries its error.
		resp = req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		code, msg := controller.ErrorCode(err)
		seen := map[string]bool{}
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: user, ErrorCode: code, ErrorMessage: msg})
			}
		}
		for _, d := range req.Deletions {
			add(d.Name)
		}
		for _, u := range req.Upsertions {
			add(u.Name)
		}
	}
	return resp, nil
}

// refuseAlterUserScram answers a request refused whole: one result per
// user named, deletions first.
func refuseAlterUserScram(r kmsg.Request, code int16, msg *string) kmsg.Response {
	req := r.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]bool{}
	add := func(user string) {
		if seen[user] {
			return
		}
		seen[user] = true
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = user, code, msg
		resp.Results = append(resp.Results, res)
	}
	for _, d := range req.Deletions {
		add(d.Name)
	}
	for _, u := range req.Upsertions {
		add(u.Name)
	}
	return resp
}
