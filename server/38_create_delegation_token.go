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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(38, 1, 3, (*Server).handleCreateDelegationToken,
		accessRule{name: "CreateDelegationToken", items: "CREATE_TOKENS on the owner's USER when the owner is not the requester"})
}

func (s *Server) handleCreateDelegationToken(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateDelegationTokenRequest)
	requester := s.tokenPrincipal(r)
	// A token for another owner needs CREATE_TOKENS on that USER, checked
	// once token requests are allowed at all, as Apache's ControllerApis.
	owner := Principal{Type: r.Principal.Type, Name: r.Principal.Name}
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		owner = Principal{Type: deref(req.OwnerPrincipalType), Name: *req.OwnerPrincipalName}
	}
	if requester.Allowed && owner.String() != r.Principal.String() && !s.allowed(r, authz.OpCreateTokens, authz.ResourceUser, owner.String()) {
		resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
		resp.ErrorCode = kerr.DelegationTokenAuthorizationFailed.Code
		resp.PrincipalType, resp.PrincipalName = owner.Type, owner.Name
		resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = r.Principal.Type, r.Principal.Name
		return resp, nil
	}
	err := errNoController
	var resp *kmsg.CreateDelegationTokenResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.CreateDelegationToken(ctx, requester, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
		resp.ErrorCode, _ = controller.ErrorCode(err)
		resp.PrincipalType, resp.PrincipalName = r.Principal.Type, r.Principal.Name
	}
	return resp, nil
}
