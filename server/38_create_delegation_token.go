package server

// CreateDelegationToken: v1-3
//
// Version notes:
//   - v0 was removed in Apache 4.0.
//   - v2: flexible.
//   - v3: OwnerPrincipalType/Name (a token for another owner) and the
//     requester in the response.
//
// Issues a delegation token (kafka-delegation-tokens.sh --create) as a
// DelegationTokenRecord; the response carries its password, the HMAC of
// its id under delegation.token.secret.key. Brokers forward it inside an
// Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

func init() { regKey(38, 1, 3, (*Server).handleCreateDelegationToken) }

func (s *Server) handleCreateDelegationToken(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateDelegationTokenRequest)
	err := errNoController
	var resp *kmsg.CreateDelegationTokenResponse
	if ctl := s.controllerOf(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.CreateDelegationToken(ctx, s.tokenPrincipal(r), req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
		resp.ErrorCode, _ = controller.ErrorCode(err)
		resp.PrincipalType, resp.PrincipalName = r.Principal.Type, r.Principal.Name
	}
	return resp, nil
}
