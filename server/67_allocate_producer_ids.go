package server

// AllocateProducerIds: v0
//
// Hands a broker the next block of 1000 producer ids (ProducerIdsRecord
// keeps the high-water mark). Brokers send it directly, not in an Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(67, 0, 0, (*Server).handleAllocateProducerIDs,
		accessRule{name: "AllocateProducerIds", cluster: authz.OpClusterAction})
}

func (s *Server) handleAllocateProducerIDs(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AllocateProducerIDsRequest)
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	err := errNoController
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		resp.ProducerIDStart, resp.ProducerIDLen, err = ctl.AllocateProducerIDs(ctx, req.BrokerID, req.BrokerEpoch)
	}
	if err != nil {
		resp.ProducerIDStart, resp.ProducerIDLen = -1, 0
		resp.ErrorCode, _ = controller.ErrorCode(err)
	}
	return resp, nil
}
