package server

// RenewDelegationToken: v1-2
//
// Version notes:
//   - v0 was removed in Apache 4.0.
//   - v2: flexible.
//
// Moves a token's expiry forward (kafka-delegation-tokens.sh --renew); the
// owner and the token's renewers may. Brokers forward it inside an
// Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(39, 1, 2, (*Server).handleRenewDelegationToken,
		accessRule{name: "RenewDelegationToken", items: "no ACL: only the token's owner or a renewer (the controller's rule)"})
}

func (s *Server) handleRenewDelegationToken(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.RenewDelegationTokenRequest)
	err := errNoController
	var resp *kmsg.RenewDelegationTokenResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.RenewDelegationToken(ctx, s.tokenPrincipal(r), req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
		resp.ErrorCode, _ = controller.ErrorCode(err)
		resp.ExpiryTimestamp = -1
	}
	return resp, nil
}
