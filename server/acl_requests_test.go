package server

import (
	"testing"
	"time"

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

// CreateAcls, DescribeAcls and DeleteAcls against one real kraftd node with
// the authorizer on (the client is a super user): created ACLs are
// described and govern, deleted ones are gone.
func TestACLRequestsOnANode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	nodes := startBenchQuorumWith(t, 1, map[string]string{
		"authorizer.class.name": StandardAuthorizerClass, "super.users": "User:ANONYMOUS",
	})
	waitBenchLeader(t, nodes, 30*time.Second)
	c := dial(t, nodes[0].srv.Addr("CONTROLLER").String())
	corr := int32(0)
	roundTrip := func(req kmsg.Request) kmsg.Response {
		corr++
		c.send(req, corr)
		_, resp := c.recv(req)
		return resp
	}
	create := createACLsRequest(
		authz.ACL{ResourceType: authz.ResourceTopic, ResourceName: "orders", PatternType: authz.PatternLiteral, Principal: "User:alice", Host: "*", Operation: authz.OpRead, Permission: authz.PermissionAllow},
		authz.ACL{ResourceType: authz.ResourceGroup, ResourceName: "app-", PatternType: authz.PatternPrefixed, Principal: "User:alice", Host: "*", Operation: authz.OpRead, Permission: authz.PermissionAllow},
		authz.ACL{ResourceType: authz.ResourceCluster, ResourceName: "wrong", PatternType: authz.PatternLiteral, Principal: "User:alice", Host: "*", Operation: authz.OpAlter, Permission: authz.PermissionAllow},
	)
	var results []kmsg.CreateACLsResponseResult
	deadline := time.Now().Add(30 * time.Second)
	for {
		results = roundTrip(create).(*kmsg.CreateACLsResponse).Results
		if results[0].ErrorCode != kerr.NotController.Code || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the leader activates its controller after its first commit
	}
	if results[0].ErrorCode != 0 || results[1].ErrorCode != 0 || results[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("CreateAcls results %+v", results)
	}
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.Version = 3
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if d := roundTrip(describe).(*kmsg.DescribeACLsResponse); d.ErrorCode != 0 || len(d.Resources) != 2 || d.Resources[0].ResourceName != "orders" {
		t.Fatalf("DescribeAcls: %+v", d)
	}
	idx := nodes[0].node.Controller().ACLs()
	a := authz.New(idx, nil, false)
	if !a.Authorize(authz.Action{Principal: "User:alice", Host: "127.0.0.1", Operation: authz.OpRead, ResourceType: authz.ResourceGroup, ResourceName: "app-1"}).Allowed {
		t.Fatal("the created prefixed ACL does not govern")
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	f := kmsg.NewDeleteACLsRequestFilter()
	name := "orders"
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeMatch
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	dr := roundTrip(del).(*kmsg.DeleteACLsResponse)
	if len(dr.Results) != 1 || dr.Results[0].ErrorCode != 0 || len(dr.Results[0].MatchingACLs) != 1 || dr.Results[0].MatchingACLs[0].Principal != "User:alice" {
		t.Fatalf("DeleteAcls: %+v", dr)
	}
	if idx.Len() != 1 {
		t.Fatalf("%d ACLs after the delete, want 1", idx.Len())
	}
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
