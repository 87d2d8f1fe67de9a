package authz

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/metadata"
)

func uuid(n int) metadata.Uuid {
	var u metadata.Uuid
	u[0], u[1], u[2], u[15] = byte(n>>16), byte(n>>8), byte(n), 1
	return u
}

func record(n int, a ACL) *metadata.AccessControlEntryRecord {
	return &metadata.AccessControlEntryRecord{Id: uuid(n), ResourceType: int8(a.ResourceType), ResourceName: a.ResourceName,
		PatternType: int8(a.PatternType), Principal: a.Principal, Host: a.Host, Operation: int8(a.Operation),
		PermissionType: int8(a.Permission)}
}

func allow(p string, op Operation, t ResourceType, name string, pt PatternType) ACL {
	return ACL{t, name, pt, p, Wildcard, op, PermissionAllow}
}

func deny(p string, op Operation, t ResourceType, name string, pt PatternType) ACL {
	return ACL{t, name, pt, p, Wildcard, op, PermissionDeny}
}

func fromHost(a ACL, host string) ACL { a.Host = host; return a }

// rulesACLs is the ACL set the rule table below is decided against.
var rulesACLs = []ACL{
	allow("User:alice", OpRead, ResourceTopic, "foo", PatternLiteral),
	deny("User:alice", OpRead, ResourceTopic, "foo-secret", PatternLiteral),
	allow("User:bob", OpAll, ResourceTopic, "pre-", PatternPrefixed),
	deny("User:bob", OpWrite, ResourceTopic, "pre-locked", PatternPrefixed),
	allow("User:*", OpDescribe, ResourceGroup, Wildcard, PatternLiteral),
	fromHost(allow("User:carol", OpAlterConfigs, ResourceCluster, ClusterName, PatternLiteral), "10.1.2.3"),
	fromHost(allow("User:dave", OpRead, ResourceTopic, "net", PatternLiteral), "10.0.0.0/8"),
	fromHost(allow("User:dave", OpRead, ResourceTopic, "net6", PatternLiteral), "0:0:0:0:0:0:0:1"),
	allow("User:erin", OpDescribe, ResourceTopic, "both", PatternLiteral),
	deny("User:erin", OpRead, ResourceTopic, "both", PatternLiteral),
	deny("User:*", OpAll, ResourceTopic, "closed", PatternLiteral),
	allow("User:frank", OpWrite, ResourceTopic, "closed", PatternLiteral),
	allow("User:gina", OpWrite, ResourceTransactionalID, Wildcard, PatternLiteral),
	deny("User:gina", OpWrite, ResourceTransactionalID, "gi", PatternPrefixed),
	allow("User:hank", OpCreate, ResourceTopic, "star*", PatternPrefixed),
	allow("User:ivy", OpAlter, ResourceGroup, "g1", PatternLiteral),
	allow("User:ivy", OpIdempotentWrite, ResourceCluster, ClusterName, PatternLiteral),
}

func TestAuthorizeRules(t *testing.T) {
	x := NewIndex()
	for i, a := range rulesACLs {
		x.Apply(record(i, a))
	}
	type check struct {
		principal, host string
		op              Operation
		t               ResourceType
		name            string
		mv              int16
		want            bool
		rule            Rule
	}
	const any = "192.168.0.9"
	checks := map[string]check{
		"literal allow":                          {"User:alice", any, OpRead, ResourceTopic, "foo", 27, true, RuleMatchingACL},
		"READ implies DESCRIBE":                  {"User:alice", any, OpDescribe, ResourceTopic, "foo", 27, true, RuleMatchingACL},
		"READ does not imply WRITE":              {"User:alice", any, OpWrite, ResourceTopic, "foo", 27, false, RuleDefaultDeny},
		"literal is not a prefix":                {"User:alice", any, OpRead, ResourceTopic, "foobar", 27, false, RuleNoACLs},
		"other principal, resource has ACLs":     {"User:zed", any, OpRead, ResourceTopic, "foo", 27, false, RuleDefaultDeny},
		"literal deny":                           {"User:alice", any, OpRead, ResourceTopic, "foo-secret", 27, false, RuleMatchingACL},
		"prefixed ALL":                           {"User:bob", any, OpDelete, ResourceTopic, "pre-x", 27, true, RuleMatchingACL},
		"prefixed matches its own name":          {"User:bob", any, OpRead, ResourceTopic, "pre-", 27, true, RuleMatchingACL},
		"longer prefixed deny":                   {"User:bob", any, OpWrite, ResourceTopic, "pre-locked-1", 27, false, RuleMatchingACL},
		"longer prefixed deny is per op":         {"User:bob", any, OpRead, ResourceTopic, "pre-locked-1", 27, true, RuleMatchingACL},
		"prefix shorter than the name":           {"User:bob", any, OpRead, ResourceTopic, "pre", 27, false, RuleNoACLs},
		"wildcard principal and name":            {"Group:anyone", any, OpDescribe, ResourceGroup, "g9", 27, true, RuleMatchingACL},
		"DESCRIBE does not imply READ":           {"User:alice", any, OpRead, ResourceGroup, "g9", 27, false, RuleDefaultDeny},
		"resource types are apart":               {"User:alice", any, OpRead, ResourceGroup, "foo", 27, false, RuleDefaultDeny},
		"host matches":                           {"User:carol", "10.1.2.3", OpAlterConfigs, ResourceCluster, ClusterName, 27, true, RuleMatchingACL},
		"host differs":                           {"User:carol", "10.1.2.4", OpAlterConfigs, ResourceCluster, ClusterName, 27, false, RuleDefaultDeny},
		"ALTER_CONFIGS implies DESCRIBE_CONFIGS": {"User:carol", "10.1.2.3", OpDescribeConfigs, ResourceCluster, ClusterName, 27, true, RuleMatchingACL},
		"ALTER_CONFIGS does not imply DESCRIBE":  {"User:carol", "10.1.2.3", OpDescribe, ResourceCluster, ClusterName, 27, false, RuleDefaultDeny},
		"CIDR host from 4.4-IV1":                 {"User:dave", "10.9.9.9", OpRead, ResourceTopic, "net", 32, true, RuleMatchingACL},
		"CIDR host outside":                      {"User:dave", "11.0.0.1", OpRead, ResourceTopic, "net", 32, false, RuleDefaultDeny},
		"CIDR host literal before 4.4-IV1":       {"User:dave", "10.9.9.9", OpRead, ResourceTopic, "net", 31, false, RuleDefaultDeny},
		"CIDR text matches literally":            {"User:dave", "10.0.0.0/8", OpRead, ResourceTopic, "net", 27, true, RuleMatchingACL},
		"IPv6 host in Java's form":               {"User:dave", "0:0:0:0:0:0:0:1", OpRead, ResourceTopic, "net6", 27, true, RuleMatchingACL},
		"DENY READ does not deny DESCRIBE":       {"User:erin", any, OpDescribe, ResourceTopic, "both", 27, true, RuleMatchingACL},
		"DENY READ denies READ":                  {"User:erin", any, OpRead, ResourceTopic, "both", 27, false, RuleMatchingACL},
		"DENY before ALLOW":                      {"User:frank", any, OpWrite, ResourceTopic, "closed", 27, false, RuleMatchingACL},
		"DENY of a wildcard principal":           {"User:alice", any, OpDescribe, ResourceTopic, "closed", 27, false, RuleMatchingACL},
		"wildcard name allows":                   {"User:gina", any, OpWrite, ResourceTransactionalID, "anything", 27, true, RuleMatchingACL},
		"prefixed deny beats wildcard allow":     {"User:gina", any, OpWrite, ResourceTransactionalID, "gift", 27, false, RuleMatchingACL},
		"star inside a prefix is literal text":   {"User:hank", any, OpCreate, ResourceTopic, "star*x", 27, true, RuleMatchingACL},
		"star inside a prefix matches no other":  {"User:hank", any, OpCreate, ResourceTopic, "starx", 27, false, RuleNoACLs},
		"ALTER implies DESCRIBE":                 {"User:ivy", any, OpDescribe, ResourceGroup, "g1", 27, true, RuleMatchingACL},
		"no implication to IDEMPOTENT_WRITE":     {"User:ivy", any, OpWrite, ResourceCluster, ClusterName, 27, false, RuleDefaultDeny},
		"super user beats DENY":                  {"User:admin", any, OpWrite, ResourceTopic, "closed", 27, true, RuleSuperUser},
		"super user on no ACLs":                  {"User:admin", any, OpAlter, ResourceCluster, ClusterName, 27, true, RuleSuperUser},
	}
	for _, allowIfNoACL := range []bool{false, true} {
		a := New(x, ParseSuperUsers(" User:admin ;User:broker"), allowIfNoACL)
		for name, c := range checks {
			x.Apply(&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: c.mv})
			d := a.Authorize(Action{c.principal, c.host, c.op, c.t, c.name})
			want := c.want || (c.rule == RuleNoACLs && allowIfNoACL)
			if d.Allowed != want || d.Rule != c.rule {
				t.Errorf("allow.everyone.if.no.acl.found=%v, %s: %s: got %v by %s, want %v by rule %d",
					allowIfNoACL, name, Action{c.principal, c.host, c.op, c.t, c.name}, d.Allowed, d, want, c.rule)
			}
		}
	}
}

func TestRemoveTakesEffect(t *testing.T) {
	x := NewIndex()
	a := New(x, nil, false)
	act := Action{"User:alice", "127.0.0.1", OpWrite, ResourceTopic, "t-1"}
	x.Apply(record(1, allow("User:alice", OpWrite, ResourceTopic, "t-", PatternPrefixed)))
	x.Apply(record(2, deny("User:alice", OpWrite, ResourceTopic, "t-1", PatternLiteral)))
	if a.Authorize(act).Allowed {
		t.Fatal("allowed despite a DENY")
	}
	x.Apply(&metadata.RemoveAccessControlEntryRecord{Id: uuid(2)})
	if d := a.Authorize(act); !d.Allowed || d.ACL.PatternType != PatternPrefixed {
		t.Fatalf("after removing the DENY: %s", d)
	}
	x.Apply(&metadata.RemoveAccessControlEntryRecord{Id: uuid(1)})
	x.Apply(&metadata.RemoveAccessControlEntryRecord{Id: uuid(1)}) // unknown now: ignored
	if d := a.Authorize(act); d.Allowed || d.Rule != RuleNoACLs || x.Len() != 0 || len(x.lengths[ResourceTopic]) != 0 {
		t.Fatalf("after removing every ACL: %s, %d left, lengths %v", d, x.Len(), x.lengths)
	}
	// Re-adding an id replaces its ACL.
	x.Apply(record(3, allow("User:alice", OpWrite, ResourceTopic, "t-1", PatternLiteral)))
	x.Apply(record(3, allow("User:alice", OpRead, ResourceTopic, "t-1", PatternLiteral)))
	if a.Authorize(act).Allowed || x.Len() != 1 {
		t.Fatal("a replaced ACL still allows")
	}
}

func TestLoadFromImage(t *testing.T) {
	im := metadata.NewImage()
	for i, a := range rulesACLs {
		if err := im.Apply(record(i, a)); err != nil {
			t.Fatal(err)
		}
	}
	im.Features["metadata.version"] = 33
	x := NewIndex()
	x.Apply(record(999, deny("User:dave", OpAll, ResourceTopic, "net", PatternLiteral))) // dropped by Load
	x.Load(im)
	d := New(x, nil, false).Authorize(Action{"User:dave", "10.2.3.4", OpRead, ResourceTopic, "net"})
	if !d.Allowed || x.Len() != len(rulesACLs) {
		t.Fatalf("loaded index: %s with %d ACLs", d, x.Len())
	}
}

func TestHostOf(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:9092":      "127.0.0.1",
		"[::1]:9092":          "0:0:0:0:0:0:0:1",
		"[::ffff:10.0.0.1]:1": "10.0.0.1",
		"[2001:db8::1:0]:1":   "2001:db8:0:0:0:0:1:0",
		"[fe80::1%lo]:1":      "fe80:0:0:0:0:0:0:1%lo",
	} {
		ap := netip.MustParseAddrPort(in)
		addr := &net.TCPAddr{IP: ap.Addr().AsSlice(), Port: int(ap.Port()), Zone: ap.Addr().Zone()}
		if got := HostOf(addr); got != want {
			t.Errorf("HostOf(%s) = %q, want %q", in, got, want)
		}
	}
}

// naiveAuthorize is the rule written as a scan over every ACL, against
// which the index is checked.
func naiveAuthorize(acls []ACL, superUsers map[string]bool, allowIfNoACL, cidr bool, act Action) bool {
	if superUsers[act.Principal] {
		return true
	}
	found, allowed := false, false
	for _, a := range acls {
		if a.ResourceType != act.ResourceType {
			continue
		}
		literal := a.PatternType == PatternLiteral && (a.ResourceName == act.ResourceName || a.ResourceName == Wildcard)
		prefixed := a.PatternType == PatternPrefixed && strings.HasPrefix(act.ResourceName, a.ResourceName)
		if !literal && !prefixed {
			continue
		}
		found = true
		if a.Principal != act.Principal && a.Principal != WildcardPrincipal {
			continue
		}
		hostOK := a.Host == Wildcard || a.Host == act.Host
		if p, err := netip.ParsePrefix(a.Host); err == nil && cidr {
			h, err := netip.ParseAddr(act.Host)
			hostOK = hostOK || (err == nil && p.Contains(h))
		}
		if !hostOK {
			continue
		}
		opOK := a.Operation == OpAll || a.Operation == act.Operation
		if a.Permission == PermissionAllow {
			opOK = opOK || (act.Operation == OpDescribe && (a.Operation == OpRead || a.Operation == OpWrite || a.Operation == OpDelete || a.Operation == OpAlter)) ||
				(act.Operation == OpDescribeConfigs && a.Operation == OpAlterConfigs)
		}
		if !opOK {
			continue
		}
		if a.Permission == PermissionDeny {
			return false
		}
		allowed = allowed || a.Permission == PermissionAllow
	}
	return allowed || (!found && allowIfNoACL)
}

// TestIndexMatchesScan checks random ACL sets, including removals, against
// the naive scan.
func TestIndexMatchesScan(t *testing.T) {
	names := []string{"a", "ab", "abc", "b", "ba", Wildcard, "", "abcd"}
	principals := []string{"User:u1", "User:u2", WildcardPrincipal, "Group:u1"}
	hosts := []string{Wildcard, "10.0.0.1", "10.0.0.0/24", "10.0.1.0/24"}
	ops := []Operation{OpAll, OpRead, OpWrite, OpDescribe, OpAlter, OpAlterConfigs, OpDescribeConfigs, OpCreate}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		pick := func(n int) int { return rng.IntN(n) }
		x := NewIndex()
		cidr := seed%2 == 0
		x.Apply(&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: map[bool]int16{true: 33, false: 27}[cidr]})
		live := map[int]ACL{}
		for i := range 1 + pick(30) {
			a := ACL{ResourceType(2 + pick(2)), names[pick(len(names))], PatternType(3 + pick(2)), principals[pick(len(principals))],
				hosts[pick(len(hosts))], ops[pick(len(ops))], Permission(2 + pick(2))}
			x.Apply(record(i, a))
			live[i] = a
			if pick(4) == 0 {
				victim := pick(i + 1)
				x.Apply(&metadata.RemoveAccessControlEntryRecord{Id: uuid(victim)})
				delete(live, victim)
			}
		}
		var acls []ACL
		for _, a := range live {
			acls = append(acls, a)
		}
		su := map[string]bool{"User:root": true}
		allowIfNoACL := seed%3 == 0
		a := New(x, []string{"User:root"}, allowIfNoACL)
		for range 50 {
			act := Action{[]string{"User:u1", "User:u2", "Group:u1", "User:root"}[pick(4)], []string{"10.0.0.1", "10.0.0.7", "10.0.1.1"}[pick(3)],
				ops[pick(len(ops))], ResourceType(2 + pick(2)), names[pick(len(names))] + []string{"", "x"}[pick(2)]}
			want := naiveAuthorize(acls, su, allowIfNoACL, cidr, act)
			if got := a.Authorize(act); got.Allowed != want {
				t.Fatalf("seed %d: %s: index says %s (%v), scan says %v; ACLs:\n%s", seed, act, got, got.Allowed, want, fmt.Sprint(acls))
			}
		}
	}
}

// Before the ACLs are loaded only super users are allowed, even with
// allow.everyone.if.no.acl.found; once loaded, the ACLs decide.
func TestNothingButSuperUsersBeforeTheLoad(t *testing.T) {
	x := NewIndex()
	a := New(x, []string{"User:admin"}, true)
	loaded := make(chan struct{})
	a.WaitForLoad(loaded)
	alice := Action{"User:alice", "127.0.0.1", OpWrite, ResourceTopic, "t-1"}
	if d := a.Authorize(alice); d.Allowed || d.Rule != RuleNotReady || d.String() != "AuthorizerNotReady" {
		t.Fatalf("alice before the load: %s (rule %d)", d, d.Rule)
	}
	if d := a.Authorize(Action{"User:admin", "127.0.0.1", OpAlter, ResourceCluster, ClusterName}); !d.Allowed || d.Rule != RuleSuperUser {
		t.Fatalf("a super user before the load: %s", d)
	}
	x.Apply(record(1, deny("User:alice", OpWrite, ResourceTopic, "t-", PatternPrefixed)))
	close(loaded)
	if d := a.Authorize(alice); d.Allowed || d.Rule != RuleMatchingACL {
		t.Fatalf("alice after the load, denied by a prefixed ACL: %s", d)
	}
	if d := a.Authorize(Action{"User:alice", "127.0.0.1", OpWrite, ResourceTopic, "other"}); !d.Allowed || d.Rule != RuleNoACLs {
		t.Fatalf("alice after the load, on a topic no ACL names: %s", d)
	}
}
