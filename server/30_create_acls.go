package server

// CreateAcls: v1-3
//
// Version notes:
//   - v0 was removed in Apache 4.0.
//   - v1: pattern types. v2: flexible. v3: the USER resource type.
//
// Brokers forward it inside an Envelope (kafka-acls --add). Needs ALTER on
// the cluster. Each ACL is validated as Apache's controller does and
// written as an AccessControlEntryRecord; the answer, one result per ACL,
// comes when the records commit. A creation with a filter's pattern type
// (MATCH or ANY) fails the whole request with UNKNOWN_SERVER_ERROR and no
// message, nothing written, as on Apache; so does a request refused
// whole before the ACLs are loaded (refusalMessage).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(30, 1, 3, (*Server).handleCreateAcls,
		accessRule{name: "CreateAcls", cluster: authz.OpAlter, refuse: refuseCreateAcls})
}

func (s *Server) handleCreateAcls(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateACLsRequest)
	if s.authorizer == nil {
		return refuseCreateAcls(req, kerr.SecurityDisabled.Code, ptr("No Authorizer is configured.")), nil
	}
	for _, c := range req.Creations {
		if p := authz.PatternType(c.ResourcePatternType).Known(); p == authz.PatternMatch || p == authz.PatternAny {
			// Apache's ResourcePattern refuses to hold a filter's pattern
			// type, and the exception fails the whole request before any
			// ACL is written.
			return refuseCreateAcls(req, kerr.UnknownServerError.Code, nil), nil
		}
	}
	acls := make([]authz.ACL, len(req.Creations))
	for i, c := range req.Creations {
		acls[i] = authz.ACL{ResourceType: authz.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: authz.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
			Operation: authz.Operation(c.Operation), Permission: authz.Permission(c.PermissionType)}
	}
	err := errNoController
	var results []error
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		results, err = ctl.CreateACLs(ctx, acls)
	}
	if err != nil {
		code, msg := controller.ErrorCode(err)
		return refuseCreateAcls(req, code, ptr(deref(msg))), nil
	}
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for _, e := range results {
		res := kmsg.NewCreateACLsResponseResult()
		if e != nil {
			res.ErrorCode, res.ErrorMessage = controller.ErrorCode(e)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// refuseCreateAcls answers a request refused whole: one result per ACL.
func refuseCreateAcls(r kmsg.Request, code int16, msg *string) kmsg.Response {
	req := r.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp
}
