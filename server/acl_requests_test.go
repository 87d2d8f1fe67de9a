package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/internal/wiretest"
)

// Without an authorizer the ACL requests are answered SECURITY_DISABLED,
// as Apache answers them.
func TestACLRequestsWithoutAuthorizer(t *testing.T) {
	_, addr, _ := startServer(t)
	c := wiretest.Dial(t, addr)
	create := wiretest.CreateACLsRequest(authz.ACL{ResourceType: authz.ResourceTopic, ResourceName: "t", PatternType: authz.PatternLiteral,
		Principal: "User:a", Host: "*", Operation: authz.OpRead, Permission: authz.PermissionAllow})
	c.Send(create, 1)
	if _, resp := c.Recv(create); resp.(*kmsg.CreateACLsResponse).Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("CreateAcls without an authorizer: %+v", resp)
	}
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.Version = 2
	c.Send(describe, 2)
	if _, resp := c.Recv(describe); resp.(*kmsg.DescribeACLsResponse).ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls without an authorizer: %+v", resp)
	}
}
