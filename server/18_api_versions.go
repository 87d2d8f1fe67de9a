package server

// ApiVersions: v0-4
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: flexible; ClientSoftwareName/Version (KIP-511); SupportedFeatures,
//     FinalizedFeatures and their epoch as tagged fields (KIP-584).
//   - v4: features whose minimum level is 0 are listed too (KAFKA-17011);
//     below v4 they are left out, because older clients reject a 0 minimum.
//
// A request at a version above 4 never reaches this handler: conn.go answers
// it at v0 with UNSUPPORTED_VERSION, as Apache does.

import (
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

func init() { regKey(18, 0, 4, (*Server).handleApiVersions) }

// softwareNamePattern is Apache's rule for KIP-511 client names and versions.
var softwareNamePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (s *Server) handleApiVersions(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = s.registry.ApiKeys()
	if req.Version >= 3 && !(softwareNamePattern.MatchString(req.ClientSoftwareName) && softwareNamePattern.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
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
