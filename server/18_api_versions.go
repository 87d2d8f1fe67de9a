package server

// ApiVersions: v0-5
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: flexible; ClientSoftwareName/Version (KIP-511); SupportedFeatures,
//     FinalizedFeatures and their epoch as tagged fields (KIP-584).
//   - v4: features whose minimum level is 0 are listed too (KAFKA-17011);
//     below v4 they are left out, because older clients reject a 0 minimum.
//   - v5: ClusterId and NodeId (KIP-1242): a client names both or neither,
//     else INVALID_REQUEST. A controller does not compare them with its own
//     (Apache's brokers answer a mismatch with REBOOTSTRAP_REQUIRED; its
//     controllers do not), so neither does kraftd.
//
// An invalid request is answered with its error code alone, no ApiKeys, as
// Apache's ApiVersionsRequest.getErrorResponse does.
//
// A request at a version above 5 never reaches this handler: conn.go answers
// it at v0 with UNSUPPORTED_VERSION, as Apache does.

import (
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(18, 0, 5, (*Server).handleApiVersions,
		accessRule{name: "ApiVersions", open: true})
}

// softwareNamePattern is Apache's rule for KIP-511 client names and versions.
var softwareNamePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (s *Server) handleApiVersions(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if !validApiVersionsRequest(req) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ApiKeys = s.registry.ApiKeys()
	if req.Version < 3 {
		return resp, nil
	}
	for _, f := range controller.SupportedFeatures {
		if f.Min == 0 && req.Version < 4 {
			continue
		}
		resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{Name: f.Name, MinVersion: f.Min, MaxVersion: f.Max})
	}
	levels, epoch := s.backend.Features()
	resp.FinalizedFeaturesEpoch = epoch
	names := make([]string, 0, len(levels))
	for name := range levels {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, kmsg.ApiVersionsResponseFinalizedFeature{Name: name, MinVersionLevel: levels[name], MaxVersionLevel: levels[name]})
	}
	return resp, nil
}

// validApiVersionsRequest is Apache's ApiVersionsRequest.isValid.
func validApiVersionsRequest(req *kmsg.ApiVersionsRequest) bool {
	if req.Version >= 5 && (req.ClusterID == nil) != (req.NodeID == -1) {
		return false
	}
	return req.Version < 3 || softwareNamePattern.MatchString(req.ClientSoftwareName) && softwareNamePattern.MatchString(req.ClientSoftwareVersion)
}
