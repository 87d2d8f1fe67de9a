package server

// DescribeCluster: v0-2
//
// Version notes:
//   - v1: EndpointType (KIP-919). A controller serves only type 2
//     (CONTROLLER) and lists the registered controllers as Brokers.
//   - v2: IncludeFencedBrokers and IsFenced (meaningless for controllers).
//
// Apache's controller refuses it while metadata.version is below 3.7-IV0
// (level 15), because controller registrations do not exist before that.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	// ALTER on a controller, unlike a broker.
	regKey(60, 0, 2, (*Server).handleDescribeCluster,
		accessRule{name: "DescribeCluster", cluster: authz.OpAlter})
}

const (
	endpointTypeBroker       int8 = 1
	endpointTypeController   int8 = 2
	mvControllerRegistration      = 15 // 3.7-IV0
)

func (s *Server) handleDescribeCluster(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeController
	levels, _ := s.backend.Features()
	if levels[controller.MetadataVersionFeature] < controller.MVControllerRegistration {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		msg := "Direct-to-controller communication is not supported with the current metadata.version."
		resp.ErrorMessage = &msg
		return resp, nil
	}
	if req.EndpointType != endpointTypeController {
		code := kerr.MismatchedEndpointType.Code
		if req.EndpointType != endpointTypeBroker {
			code = kerr.UnsupportedEndpointType.Code
		}
		if req.Version == 0 {
			code = kerr.InvalidRequest.Code
		}
		resp.ErrorCode = code
		msg := "this is a controller endpoint"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	resp.ClusterID = s.backend.ClusterID()
	resp.Brokers = s.backend.Controllers(r.Listener)
	resp.ControllerID = -1
	if leader := s.backend.ActiveController(); leader >= 0 {
		for _, b := range resp.Brokers {
			if b.NodeID == leader {
				// Apache reports -1 for a leader it has no endpoint for,
				// so that clients never chase an unknown node.
				resp.ControllerID = leader
			}
		}
	}
	return resp, nil
}
