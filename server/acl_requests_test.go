package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
)

func createACLsRequest(acls ...authz.ACL) *kmsg.CreateACLsRequest {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	for _, a := range acls {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
		c.Principal, c.Host, c.Operation, c.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		req.Creations = append(req.Creations, c)
	}
	return req
}

// Without an authorizer the ACL requests are answered SECURITY_DISABLED,
// as Apache answers them.
func TestACLRequestsWithoutAuthorizer(t *testing.T) {
	_, addr, _ := startServer(t)
	c := dial(t, addr)
	create := createACLsRequest(authz.ACL{ResourceType: authz.ResourceTopic, ResourceName: "t", PatternType: authz.PatternLiteral,
		Principal: "User:a", Host: "*", Operation: authz.OpRead, Permission: authz.PermissionAllow})
	c.send(create, 1)
	if _, resp := c.recv(create); resp.(*kmsg.CreateACLsResponse).Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("CreateAcls without an authorizer: %+v", resp)
	}
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.Version = 2
	c.send(describe, 2)
	if _, resp := c.recv(describe); resp.(*kmsg.DescribeACLsResponse).ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls without an authorizer: %+v", resp)
	}
}
