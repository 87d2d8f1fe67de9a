package server

// SaslHandshake: v0-1
//
// Version notes:
//   - v0: after the handshake the SASL tokens travel as bare frames, with
//     no request header (the pre-KIP-152 exchange).
//   - v1: the tokens travel in SaslAuthenticate requests (KIP-152).
//
// On a SASL listener the handshake is part of authentication and never
// reaches this handler: sasl_auth.go serves it before any other request.
// What reaches it is a handshake on a listener without SASL, or a second
// one after authentication completed; Apache answers both with
// ILLEGAL_SASL_STATE.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	regKey(17, 0, 1, (*Server).handleSaslHandshake,
		accessRule{name: "SaslHandshake", open: true})
}

func (s *Server) handleSaslHandshake(r *Request) (kmsg.Response, error) {
	resp := r.Body.(*kmsg.SASLHandshakeRequest).ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}

// saslHandshake answers the handshake of an authenticating connection and
// returns the mechanism chosen, or ok false when the client asked for one
// the listener does not enable (the caller then closes the connection).
func saslHandshake(req *kmsg.SASLHandshakeRequest, enabled []string) (resp *kmsg.SASLHandshakeResponse, ok bool) {
	resp = req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = enabled
	for _, m := range enabled {
		if m == req.Mechanism {
			return resp, true
		}
	}
	resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	return resp, false
}
