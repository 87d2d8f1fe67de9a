package server

// DescribeUserScramCredentials: v0
//
// Version notes:
//   - v0: flexible.
//
// Answered from this node's committed image: each user's mechanisms and
// iterations, never the keys. Apache's controller does not serve it (a
// broker answers it from its own image); kraftd does, for a client that
// asks the controller directly.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
)

func init() {
	// Brokers answer it in Apache; kraftd's controller does too.
	regKey(50, 0, 0, (*Server).handleDescribeUserScramCredentials,
		accessRule{name: "DescribeUserScramCredentials", cluster: authz.OpDescribe})
}

func (s *Server) handleDescribeUserScramCredentials(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	ctl := s.backend.Controller()
	if ctl == nil {
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	return ctl.DescribeUserScramCredentials(req), nil
}
