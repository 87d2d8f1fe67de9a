package server

// DeleteAcls: v1-3
//
// Version notes:
//   - v0 was removed in Apache 4.0.
//   - v1: pattern types. v2: flexible. v3: the USER resource type.
//
// Brokers forward it inside an Envelope (kafka-acls --remove). Needs ALTER
// on the cluster. Every ACL a filter matches is removed with a
// RemoveAccessControlEntryRecord; the answer lists what each filter
// removed, when the records commit.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
)

func init() {
	regKey(31, 1, 3, (*Server).handleDeleteAcls,
		accessRule{name: "DeleteAcls", cluster: authz.OpAlter, refuse: refuseDeleteAcls})
}

func (s *Server) handleDeleteAcls(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteACLsRequest)
	if s.authorizer == nil {
		return refuseDeleteAcls(req, kerr.SecurityDisabled.Code, ptr("No Authorizer is configured.")), nil
	}
	filters := make([]authz.Filter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = authz.Filter{ResourceType: authz.ResourceType(f.ResourceType), ResourceName: f.ResourceName,
			PatternType: authz.PatternType(f.ResourcePatternType), Principal: f.Principal, Host: f.Host,
			Operation: authz.Operation(f.Operation), Permission: authz.Permission(f.PermissionType)}
	}
	err := errNoController
	var results []controller.DeletedACLs
	if ctl := s.backend.Controller(); ctl != nil {
		ctx, cancel := opContext(r, 0)
		defer cancel()
		results, err = ctl.DeleteACLs(ctx, filters)
	}
	if err != nil {
		code, msg := controller.ErrorCode(err)
		return refuseDeleteAcls(req, code, ptr(deref(msg))), nil
	}
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for _, fr := range results {
		res := kmsg.NewDeleteACLsResponseResult()
		if fr.Err != nil {
			res.ErrorCode, res.ErrorMessage = controller.ErrorCode(fr.Err)
		}
		for _, a := range fr.Deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// refuseDeleteAcls answers a request refused whole: one result per filter.
func refuseDeleteAcls(r kmsg.Request, code int16, msg *string) kmsg.Response {
	req := r.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp
}
