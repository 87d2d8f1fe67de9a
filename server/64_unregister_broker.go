package server

// UnregisterBroker: v0
//
// Removes a broker's registration (kafka-cluster.sh unregister). Brokers
// forward it inside an Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(64, 0, 0, (*Server).handleUnregisterBroker,
		accessRule{name: "UnregisterBroker", cluster: authz.OpAlter})
}

func (s *Server) handleUnregisterBroker(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	err := errNoController
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		err = ctl.UnregisterBroker(ctx, req.BrokerID)
	}
	resp.ErrorCode, resp.ErrorMessage = controller.ErrorCode(err)
	return resp, nil
}
