package server

// DescribeAcls: v1-3
//
// Version notes:
//   - v0 was removed in Apache 4.0.
//   - v1: pattern types (LITERAL, PREFIXED; ANY and MATCH in filters).
//   - v2: flexible. v3: the USER resource type.
//
// Answered from the committed ACLs of this node (kafka-acls --list
// --bootstrap-controller lands here; brokers answer it themselves). Needs
// DESCRIBE on the cluster; SECURITY_DISABLED without an authorizer, as
// Apache answers.

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
)

func init() {
	regKey(29, 1, 3, (*Server).handleDescribeAcls,
		accessRule{name: "DescribeAcls", cluster: authz.OpDescribe})
}

func (s *Server) handleDescribeAcls(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if s.authorizer == nil {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		msg := "No Authorizer is configured on the broker"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	f := authz.Filter{ResourceType: authz.ResourceType(req.ResourceType), ResourceName: req.ResourceName,
		PatternType: authz.PatternType(req.ResourcePatternType), Principal: req.Principal, Host: req.Host,
		Operation: authz.Operation(req.Operation), Permission: authz.Permission(req.PermissionType)}
	var matched []authz.ACL
	for _, a := range s.authorizer.Index().ACLs() {
		if f.Matches(a) {
			matched = append(matched, a)
		}
	}
	resp.Resources = aclResources(matched)
	return resp, nil
}

// aclResources groups ACLs by resource pattern, sorted so that equal sets
// give equal answers.
func aclResources(acls []authz.ACL) []kmsg.DescribeACLsResponseResource {
	slices.SortFunc(acls, func(a, b authz.ACL) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.PatternType, b.PatternType),
			cmp.Compare(a.ResourceName, b.ResourceName), cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
			cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
	})
	var out []kmsg.DescribeACLsResponseResource
	for _, a := range acls {
		if n := len(out); n == 0 || out[n-1].ResourceType != kmsg.ACLResourceType(a.ResourceType) ||
			out[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(a.PatternType) || out[n-1].ResourceName != a.ResourceName {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			out = append(out, res)
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		out[len(out)-1].ACLs = append(out[len(out)-1].ACLs, e)
	}
	return out
}
