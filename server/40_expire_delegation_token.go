package server

// ExpireDelegationToken: v1-2
//
// Version notes:
//   - v0 was removed in Apache 4.0.
//   - v2: flexible.
//
// Moves a token's expiry to now plus a period, or removes it at once for a
// negative period (kafka-delegation-tokens.sh --expire). Brokers forward
// it inside an Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(40, 1, 2, (*Server).handleExpireDelegationToken,
		accessRule{name: "ExpireDelegationToken", items: "no ACL: only the token's owner or a renewer (the controller's rule)"})
}

func (s *Server) handleExpireDelegationToken(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ExpireDelegationTokenRequest)
	err := errNoController
	var resp *kmsg.ExpireDelegationTokenResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp, err = ctl.ExpireDelegationToken(ctx, s.tokenPrincipal(r), req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
		resp.ErrorCode, _ = controller.ErrorCode(err)
		resp.ExpiryTimestamp = -1
	}
	return resp, nil
}
