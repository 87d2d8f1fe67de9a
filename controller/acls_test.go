package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/metadata"
)

func acl(rt authz.ResourceType, name string, pt authz.PatternType, principal, host string, op authz.Operation, perm authz.Permission) authz.ACL {
	return authz.ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func stepCreateACLs(t *testing.T, c *Core, l *stepLog, acls ...authz.ACL) []error {
	t.Helper()
	var results []error
	answered := false
	c.CreateACLs(stepEpoch, acls, func(r []error, err error) {
		if err != nil {
			t.Fatal(err)
		}
		results, answered = r, true
	})
	if answered && len(l.queued) > 0 {
		t.Fatal("CreateAcls answered before its records committed")
	}
	l.settle()
	if !answered {
		t.Fatal("CreateAcls not answered after commit")
	}
	return results
}

// Apache's validation, each refusal per ACL while the others are written;
// an ACL that exists is a success without a record; the index every node
// keeps follows the records.
func TestCreateACLsValidatesAndWrites(t *testing.T) {
	c, l := newStepCore(t, 1)
	good := acl(authz.ResourceTopic, "orders", authz.PatternLiteral, "User:alice", "*", authz.OpRead, authz.PermissionAllow)
	cases := []struct {
		acl  authz.ACL
		code int16
	}{
		{good, 0},
		{good, 0}, // twice in one request: one record
		{acl(authz.ResourceCluster, "other", authz.PatternLiteral, "User:a", "*", authz.OpAlter, authz.PermissionAllow), kerr.InvalidRequest.Code},
		{acl(authz.ResourceTopic, "", authz.PatternLiteral, "User:a", "*", authz.OpRead, authz.PermissionAllow), kerr.InvalidRequest.Code},
		{acl(authz.ResourceAny, "x", authz.PatternLiteral, "User:a", "*", authz.OpRead, authz.PermissionAllow), kerr.InvalidRequest.Code},
		{acl(authz.ResourceType(42), "x", authz.PatternLiteral, "User:a", "*", authz.OpRead, authz.PermissionAllow), kerr.InvalidRequest.Code},
		{acl(authz.ResourceTopic, "x", authz.PatternMatch, "User:a", "*", authz.OpRead, authz.PermissionAllow), kerr.InvalidRequest.Code},
		{acl(authz.ResourceTopic, "x", authz.PatternLiteral, "User:a", "*", authz.OpAny, authz.PermissionAllow), kerr.InvalidRequest.Code},
		{acl(authz.ResourceTopic, "x", authz.PatternLiteral, "User:a", "*", authz.OpRead, authz.PermissionAny), kerr.InvalidRequest.Code},
		{acl(authz.ResourceTopic, "x", authz.PatternLiteral, "alice", "*", authz.OpRead, authz.PermissionAllow), kerr.InvalidRequest.Code},
		{acl(authz.ResourceTopic, "x", authz.PatternLiteral, "User:a", "", authz.OpRead, authz.PermissionAllow), kerr.InvalidRequest.Code},
		{acl(authz.ResourceTopic, "x", authz.PatternLiteral, "User:a", "10.0.0.0/8", authz.OpRead, authz.PermissionAllow), kerr.UnsupportedVersion.Code},
		{acl(authz.ResourceGroup, "g-", authz.PatternPrefixed, "User:*", "10.0.0.1", authz.OpRead, authz.PermissionDeny), 0},
	}
	var acls []authz.ACL
	for _, tc := range cases {
		acls = append(acls, tc.acl)
	}
	results := stepCreateACLs(t, c, l, acls...)
	for i, tc := range cases {
		if got := code(results[i]); got != tc.code {
			t.Errorf("%s: code %d (%v), want %d", tc.acl, got, results[i], tc.code)
		}
	}
	if n := c.ctl.ACLs().Len(); n != 2 {
		t.Fatalf("%d ACLs committed, want 2", n)
	}
	before := l.records()
	if r := stepCreateACLs(t, c, l, good); r[0] != nil || l.records() != before {
		t.Fatalf("re-creating an ACL: %v, %d records written", r[0], l.records()-before)
	}
	// CIDR hosts from 4.4-IV1.
	c, l = newStepCore(t, 3)
	l.write(&metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: mvCIDRACLs})
	r := stepCreateACLs(t, c, l, acl(authz.ResourceTopic, "x", authz.PatternLiteral, "User:a", "10.0.0.0/8", authz.OpRead, authz.PermissionAllow),
		acl(authz.ResourceTopic, "x", authz.PatternLiteral, "User:a", "10.0.0.0/33", authz.OpRead, authz.PermissionAllow))
	if r[0] != nil || code(r[1]) != kerr.InvalidRequest.Code {
		t.Fatalf("CIDR hosts at 4.4-IV1: %v", r)
	}
}

func TestDeleteACLsByFilter(t *testing.T) {
	c, l := newStepCore(t, 2)
	stepCreateACLs(t, c, l,
		acl(authz.ResourceTopic, "orders", authz.PatternLiteral, "User:alice", "*", authz.OpRead, authz.PermissionAllow),
		acl(authz.ResourceTopic, "ord", authz.PatternPrefixed, "User:alice", "*", authz.OpWrite, authz.PermissionAllow),
		acl(authz.ResourceTopic, "*", authz.PatternLiteral, "User:bob", "*", authz.OpRead, authz.PermissionAllow),
		acl(authz.ResourceGroup, "orders", authz.PatternLiteral, "User:alice", "*", authz.OpRead, authz.PermissionAllow))
	orders, alice := "orders", "User:alice"
	filters := []authz.Filter{
		{ResourceType: authz.ResourceTopic, ResourceName: &orders, PatternType: authz.PatternMatch, Principal: &alice, Operation: authz.OpAny, Permission: authz.PermissionAny},
		{ResourceType: authz.ResourceTopic, PatternType: authz.PatternUnknown, Operation: authz.OpAny, Permission: authz.PermissionAny},
		{ResourceType: authz.ResourceAny, PatternType: authz.PatternLiteral, Principal: &alice, Operation: authz.OpRead, Permission: authz.PermissionAllow},
	}
	var results []DeletedACLs
	c.DeleteACLs(stepEpoch, filters, func(r []DeletedACLs, err error) {
		if err != nil {
			t.Fatal(err)
		}
		results = r
	})
	l.settle()
	if len(results) != 3 || len(results[0].Deleted) != 2 || code(results[1].Err) != kerr.InvalidRequest.Code || len(results[2].Deleted) != 2 {
		t.Fatalf("results %+v", results)
	}
	// The topic's literal ACL matched two filters: removed once; bob's stays.
	if n := c.ctl.ACLs().Len(); n != 1 {
		t.Fatalf("%d ACLs left, want bob's", n)
	}
}
