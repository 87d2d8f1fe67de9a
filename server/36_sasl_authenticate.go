package server

// SaslAuthenticate: v0-2
//
// Version notes:
//   - v1: SessionLifetimeMillis (KIP-368): connections.max.reauth.ms for the
//     mechanism, 0 when it is off (see sasl_reauth.go).
//   - v2: flexible.
//
// On a SASL listener sasl_auth.go serves this request while the
// connection authenticates. What reaches the handler is a request on a
// listener without SASL, or one after authentication completed; Apache
// answers both with ILLEGAL_SASL_STATE.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	regKey(36, 0, 2, (*Server).handleSaslAuthenticate,
		accessRule{name: "SaslAuthenticate", open: true})
}

func (s *Server) handleSaslAuthenticate(r *Request) (kmsg.Response, error) {
	resp := r.Body.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication, or on a listener without SASL"
	resp.ErrorMessage = &msg
	return resp, nil
}
