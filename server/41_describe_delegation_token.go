package server

// DescribeDelegationToken: v1-3
//
// Version notes:
//   - v0 was removed in Apache 4.0.
//   - v2: flexible. v3: the token requester's principal.
//
// Apache's controller lists this key in ApiVersions (its message
// definition names the controller listener) but has no handler for it:
// ControllerApis answers every request of it with UNKNOWN_SERVER_ERROR,
// checking nothing. kraftd answers the same, so that a client sees the
// same keys and answers from both; brokers describe tokens from their own
// image.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	// Listed, but answered UNKNOWN_SERVER_ERROR, as Apache's controller does.
	regKey(41, 1, 3, (*Server).handleDescribeDelegationToken,
		accessRule{name: "DescribeDelegationToken", open: true})
}

func (s *Server) handleDescribeDelegationToken(r *Request) (kmsg.Response, error) {
	resp := r.Body.(*kmsg.DescribeDelegationTokenRequest).ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	resp.ErrorCode = kerr.UnknownServerError.Code
	return resp, nil
}
