package server

// UpdateFeatures: v0-2
//
// Version notes:
//   - v1: UpgradeType (upgrade, safe or unsafe downgrade) replaces
//     AllowDowngrade; ValidateOnly.
//   - v2: the response has no per-feature Results, only the top-level error.
//
// kafka-features.sh upgrade/downgrade --bootstrap-controller lands here; so
// do brokers forwarding the same through an Envelope.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(57, 0, 2, (*Server).handleUpdateFeatures,
		accessRule{name: "UpdateFeatures", cluster: authz.OpAlter})
}

func (s *Server) handleUpdateFeatures(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UpdateFeaturesRequest)
	err := errNoController
	var resp *kmsg.UpdateFeaturesResponse
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, req.TimeoutMillis)
		defer cancel()
		resp, err = ctl.UpdateFeatures(ctx, req)
	}
	if err != nil {
		resp = req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		resp.ErrorCode, resp.ErrorMessage = controller.ErrorCode(err)
		if req.Version < 2 {
			for _, u := range req.FeatureUpdates {
				res := kmsg.NewUpdateFeaturesResponseResult()
				res.Feature, res.ErrorCode, res.ErrorMessage = u.Feature, resp.ErrorCode, resp.ErrorMessage
				resp.Results = append(resp.Results, res)
			}
		}
	}
	return resp, nil
}
