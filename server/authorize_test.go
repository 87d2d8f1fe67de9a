package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/internal/wiretest"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/protocol"
)

// Every served key registers an access rule that decides one thing (open,
// a cluster operation, or per-item checks) under kmsg's name for the key,
// and a key refused whole without its own refuse function has a top-level
// ErrorCode to carry the refusal, so the rule is all a new handler needs.
func TestEveryServedKeyHasAnAccessRule(t *testing.T) {
	for key, def := range handlers {
		rule := def.access
		if !strings.EqualFold(rule.name, kmsg.NameForKey(key)) {
			t.Errorf("key %d is named %q in its access rule, %q by kmsg", key, rule.name, kmsg.NameForKey(key))
		}
		if rule.open == (rule.cluster != authz.OpUnknown || rule.items != "") {
			t.Errorf("key %d: a rule is open, or checks the cluster or items: %+v", key, rule)
		}
		if rule.cluster == authz.OpUnknown || rule.refuse != nil {
			continue
		}
		resp := kmsg.ResponseForKey(key)
		if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); !f.IsValid() || f.Kind() != reflect.Int16 {
			t.Errorf("%s: its response has no top-level ErrorCode; give its rule a refuse function", rule.name)
		}
		refused := refuseWhole(rule, kmsg.RequestForKey(key), kerr.ClusterAuthorizationFailed.Code)
		if !carriesCode(reflect.ValueOf(refused), kerr.ClusterAuthorizationFailed.Code) {
			t.Errorf("%s: the refusal does not carry the code", rule.name)
		}
	}
}

// aclBackend is a stillBackend with a controller whose committed ACLs the
// test writes by replaying records, as the node loop would.
type aclBackend struct {
	stillBackend
	ctl    *controller.Controller
	offset int64
}

func (b *aclBackend) Controller() *controller.Controller { return b.ctl }

func (b *aclBackend) replay(t *testing.T, recs ...metadata.Record) {
	t.Helper()
	for _, rec := range recs {
		if err := b.ctl.Replay(b.offset, rec); err != nil {
			t.Fatal(err)
		}
		b.offset++
	}
}

func aclRecord(id byte, principal, host string, op authz.Operation, rt authz.ResourceType, name string, pt authz.PatternType, perm authz.Permission) *metadata.AccessControlEntryRecord {
	return &metadata.AccessControlEntryRecord{Id: metadata.Uuid{15: id}, ResourceType: int8(rt), ResourceName: name,
		PatternType: int8(pt), Principal: principal, Host: host, Operation: int8(op), PermissionType: int8(perm)}
}

func startAuthorizedServer(t *testing.T, superUsers string) (string, *aclBackend) {
	t.Helper()
	props := map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://127.0.0.1:0", "log.dirs": t.TempDir(),
		"authorizer.class.name": StandardAuthorizerClass, "super.users": superUsers,
	}
	cfg, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	b := &aclBackend{stillBackend: stillBackend{wiretest.NewBackend()}, ctl: controller.New(1, nil)}
	close(b.Release)
	s := New(cfg, b, zerolog.New(zerolog.NewTestWriter(t)))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s.Addr("CONTROLLER").String(), b
}

// topCode is a response's top-level ErrorCode, or the first per-item one.
func topCode(resp kmsg.Response) int16 {
	if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); f.IsValid() {
		return int16(f.Int())
	}
	switch r := resp.(type) {
	case *kmsg.IncrementalAlterConfigsResponse:
		return r.Resources[0].ErrorCode
	case *kmsg.CreateTopicsResponse:
		return r.Topics[0].ErrorCode
	}
	return -1
}

// The three changes issue 15 opened with, and the other cluster requests,
// are refused an unauthenticated client with CLUSTER_AUTHORIZATION_FAILED
// until an ACL grants the operation; ApiVersions stays open.
func TestDirectRequestsNeedTheirClusterOperation(t *testing.T) {
	addr, b := startAuthorizedServer(t, "User:broker")
	iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	iac.Resources = append(iac.Resources, res)
	unregister := kmsg.NewPtrUnregisterBrokerRequest()
	unregister.BrokerID = 2
	register := kmsg.NewPtrControllerRegistrationRequest()
	register.ControllerID = 9
	features := kmsg.NewPtrUpdateFeaturesRequest()
	features.Version = 1
	vote := kmsg.NewPtrVoteRequest()
	vote.Version = 1
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 13
	checks := []struct {
		req kmsg.Request
		op  authz.Operation
	}{
		{iac, authz.OpAlterConfigs}, {unregister, authz.OpAlter}, {register, authz.OpClusterAction},
		{features, authz.OpAlter}, {vote, authz.OpClusterAction}, {fetch, authz.OpClusterAction},
	}
	c := wiretest.Dial(t, addr)
	for i, ch := range checks {
		c.Send(ch.req, int32(i))
		if _, resp := c.Recv(ch.req); topCode(resp) != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("%s without an ACL: code %d, want CLUSTER_AUTHORIZATION_FAILED", kmsg.NameForKey(ch.req.Key()), topCode(resp))
		}
	}
	av := kmsg.NewPtrApiVersionsRequest()
	c.Send(av, 50)
	if _, resp := c.Recv(av); resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
		t.Errorf("ApiVersions refused: %d", resp.(*kmsg.ApiVersionsResponse).ErrorCode)
	}
	for i, ch := range checks {
		b.replay(t, aclRecord(byte(i+1), "User:ANONYMOUS", "127.0.0.1", ch.op, authz.ResourceCluster, authz.ClusterName, authz.PatternLiteral, authz.PermissionAllow))
	}
	for i, ch := range checks {
		c.Send(ch.req, int32(100+i))
		if _, resp := c.Recv(ch.req); topCode(resp) == kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("%s with an ACL granting %s: still refused", kmsg.NameForKey(ch.req.Key()), ch.op)
		}
	}
	// Removing the grants of ALTER takes effect at once.
	b.replay(t, &metadata.RemoveAccessControlEntryRecord{Id: metadata.Uuid{15: 2}}, &metadata.RemoveAccessControlEntryRecord{Id: metadata.Uuid{15: 4}})
	c.Send(unregister, 200)
	if _, resp := c.Recv(unregister); topCode(resp) != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("UnregisterBroker after its ACL was removed: code %d", topCode(resp))
	}
}

func TestSuperUserNeedsNoACL(t *testing.T) {
	addr, _ := startAuthorizedServer(t, "User:admin; User:ANONYMOUS")
	c := wiretest.Dial(t, addr)
	req := kmsg.NewPtrUnregisterBrokerRequest()
	c.Send(req, 1)
	if _, resp := c.Recv(req); topCode(resp) == kerr.ClusterAuthorizationFailed.Code {
		t.Fatal("a super user was refused")
	}
}

// envelope wraps inner as a broker forwards it for principal from host.
func envelope(inner kmsg.Request, principal Principal, host []byte) *kmsg.EnvelopeRequest {
	env := kmsg.NewPtrEnvelopeRequest()
	env.RequestData = inner.AppendTo(protocol.AppendRequestHeader(nil, inner, 77, "client"))
	p := kbin.AppendInt16(nil, 0)
	p = kbin.AppendCompactString(p, principal.Type)
	p = kbin.AppendCompactString(p, principal.Name)
	p = kbin.AppendBool(p, false)
	env.RequestPrincipal = kbin.AppendUvarint(p, 0)
	env.ClientHostAddress = host
	return env
}

// A forwarded request is checked for its client's principal and host,
// after the broker's CLUSTER_ACTION for the Envelope itself. The node's
// controller is not active: a request that passes the check is answered
// NOT_CONTROLLER, one refused CLUSTER_AUTHORIZATION_FAILED.
func TestEnvelopeChecksTheForwardedPrincipal(t *testing.T) {
	addr, b := startAuthorizedServer(t, "User:broker")
	unregister := kmsg.NewPtrUnregisterBrokerRequest()
	alice := Principal{Type: "User", Name: "alice"}
	c := wiretest.Dial(t, addr)
	corr := int32(0)
	send := func(env *kmsg.EnvelopeRequest) (outer, inner int16) {
		t.Helper()
		corr++
		c.Send(env, corr)
		_, resp := c.Recv(env)
		er := resp.(*kmsg.EnvelopeResponse)
		if er.ErrorCode != 0 {
			return er.ErrorCode, 0
		}
		_, in, err := protocol.ParseResponse(er.ResponseData, unregister)
		if err != nil {
			t.Fatal(err)
		}
		return 0, in.(*kmsg.UnregisterBrokerResponse).ErrorCode
	}
	from5 := envelope(unregister, alice, []byte{10, 0, 0, 5})
	if outer, _ := send(from5); outer != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("an Envelope from ANONYMOUS: code %d, want CLUSTER_AUTHORIZATION_FAILED", outer)
	}
	b.replay(t, aclRecord(1, "User:ANONYMOUS", "*", authz.OpClusterAction, authz.ResourceCluster, authz.ClusterName, authz.PatternLiteral, authz.PermissionAllow))
	if _, inner := send(from5); inner != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's UnregisterBroker without an ACL: code %d, want CLUSTER_AUTHORIZATION_FAILED", inner)
	}
	b.replay(t, aclRecord(2, "User:alice", "10.0.0.5", authz.OpAlter, authz.ResourceCluster, authz.ClusterName, authz.PatternLiteral, authz.PermissionAllow))
	if outer, _ := send(from5); outer != kerr.NotController.Code {
		t.Fatalf("alice's UnregisterBroker from 10.0.0.5 with ALTER: envelope code %d, want it past the check (NOT_CONTROLLER)", outer)
	}
	if _, inner := send(envelope(unregister, alice, []byte{10, 0, 0, 6})); inner != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's UnregisterBroker from another host: code %d, want CLUSTER_AUTHORIZATION_FAILED", inner)
	}
}

func TestAuthorizerConfig(t *testing.T) {
	for _, class := range []string{StandardAuthorizerClass, KraftdAuthorizerClass} {
		p := baseProps()
		p["authorizer.class.name"], p["super.users"], p["allow.everyone.if.no.acl.found"] = class, "User:admin;User:CN=broker,O=kraftd", "true"
		c, err := ParseConfig(p)
		if err != nil {
			t.Fatal(err)
		}
		if a := c.Authorizer; !a.Enabled || !a.AllowIfNoACL || !reflect.DeepEqual(a.SuperUsers, []string{"User:admin", "User:CN=broker,O=kraftd"}) {
			t.Fatalf("%s: %+v", class, a)
		}
	}
	for key, props := range map[string]map[string]string{
		"authorizer.class.name":          {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"},
		"super.users":                    {"authorizer.class.name": StandardAuthorizerClass, "super.users": "admin"},
		"allow.everyone.if.no.acl.found": {"authorizer.class.name": StandardAuthorizerClass, "allow.everyone.if.no.acl.found": "maybe"},
	} {
		p := baseProps()
		for k, v := range props {
			p[k] = v
		}
		if _, err := ParseConfig(p); err == nil || err.(*ConfigError).Key != key {
			t.Errorf("%v: %v, want an error naming %s", props, err, key)
		}
	}
}

// The per-item checks answer each refused item with its own code and leave
// the others to the controller (not active here: they come back with
// whatever it says, never an authorization failure); a topic named by id
// that the principal may not DESCRIBE is refused without its name.
func TestPerItemRefusals(t *testing.T) {
	addr, b := startAuthorizedServer(t, "User:broker")
	secret := metadata.Uuid{0: 7, 15: 9}
	b.replay(t, &metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27},
		&metadata.TopicRecord{Name: "secret", TopicId: secret},
		aclRecord(1, "User:ANONYMOUS", "*", authz.OpDescribeConfigs, authz.ResourceTopic, "open", authz.PatternLiteral, authz.PermissionAllow))
	c := wiretest.Dial(t, addr)

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Version = 4
	for _, r := range []struct {
		t    kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeTopic, "open"}, {kmsg.ConfigResourceTypeTopic, "closed"}, {kmsg.ConfigResourceType(32), "g"}} {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = r.t, r.name
		dc.Resources = append(dc.Resources, res)
	}
	c.Send(dc, 1)
	_, resp := c.Recv(dc)
	codes := map[string]int16{}
	for _, r := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		codes[r.ResourceName] = r.ErrorCode
	}
	want := map[string]int16{"1": kerr.ClusterAuthorizationFailed.Code, "closed": kerr.TopicAuthorizationFailed.Code, "g": kerr.GroupAuthorizationFailed.Code}
	for name, code := range want {
		if codes[name] != code {
			t.Errorf("DescribeConfigs %s: code %d, want %d", name, codes[name], code)
		}
	}
	if code, ok := codes["open"]; !ok || code == kerr.TopicAuthorizationFailed.Code {
		t.Errorf("DescribeConfigs of the topic with DESCRIBE_CONFIGS: %d (answered %v)", code, ok)
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = secret
	name := "other"
	byName := kmsg.NewDeleteTopicsRequestTopic()
	byName.Topic = &name
	del.Topics = append(del.Topics, byID, byName)
	c.Send(del, 2)
	_, resp = c.Recv(del)
	var seen int
	for _, r := range resp.(*kmsg.DeleteTopicsResponse).Topics {
		if r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
			continue
		}
		seen++
		if r.TopicID == secret && r.Topic != nil {
			t.Errorf("a topic refused by id names itself: %q", *r.Topic)
		}
	}
	if seen != 2 {
		t.Errorf("DeleteTopics: %d refusals, want 2: %+v", seen, resp)
	}
}

// A delegation token for another owner needs CREATE_TOKENS on that USER,
// as Apache's ControllerApis checks it; a token for oneself needs no ACL.
// The requests come forwarded (token requests are refused on PLAINTEXT
// otherwise); the node's controller is not active, so one past the check is
// answered NOT_CONTROLLER.
func TestCreateTokenForAnotherOwnerNeedsCreateTokens(t *testing.T) {
	addr, b := startAuthorizedServer(t, "User:ANONYMOUS")
	alice := Principal{Type: "User", Name: "alice"}
	c := wiretest.Dial(t, addr)
	corr := int32(0)
	create := func(owner string) int16 {
		t.Helper()
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		req.Version = 3
		if owner != "" {
			typ := "User"
			req.OwnerPrincipalType, req.OwnerPrincipalName = &typ, &owner
		}
		env := envelope(req, alice, []byte{10, 0, 0, 5})
		corr++
		c.Send(env, corr)
		_, resp := c.Recv(env)
		er := resp.(*kmsg.EnvelopeResponse)
		if er.ErrorCode != 0 {
			return er.ErrorCode
		}
		_, in, err := protocol.ParseResponse(er.ResponseData, req)
		if err != nil {
			t.Fatal(err)
		}
		return in.(*kmsg.CreateDelegationTokenResponse).ErrorCode
	}
	if code := create("bob"); code != kerr.DelegationTokenAuthorizationFailed.Code {
		t.Fatalf("alice's token for bob without an ACL: code %d, want DELEGATION_TOKEN_AUTHORIZATION_FAILED", code)
	}
	for _, owner := range []string{"", "alice"} {
		if code := create(owner); code != kerr.NotController.Code {
			t.Fatalf("alice's token for herself (owner %q): code %d, want it past the check (NOT_CONTROLLER)", owner, code)
		}
	}
	b.replay(t, aclRecord(1, "User:alice", "*", authz.OpCreateTokens, authz.ResourceUser, "User:bob", authz.PatternLiteral, authz.PermissionAllow))
	if code := create("bob"); code != kerr.NotController.Code {
		t.Fatalf("alice's token for bob with CREATE_TOKENS on User:bob: code %d, want it past the check", code)
	}
}

// loadingBackend is an aclBackend whose log has not been replayed up to
// the high watermark yet until caughtUp is closed.
type loadingBackend struct {
	*aclBackend
	caughtUp chan struct{}
}

func (b loadingBackend) CaughtUp() <-chan struct{} { return b.caughtUp }

// Until the node has first replayed its log to the high watermark, a
// principal that is not a super user is refused, even where
// allow.everyone.if.no.acl.found would allow it: the ACL that denies may
// not be replayed yet. Apache's answer is UNKNOWN_SERVER_ERROR (its
// AuthorizerNotReadyException has no code). A super user is served.
func TestNoDecisionBeforeTheLogIsReplayed(t *testing.T) {
	props := map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://127.0.0.1:0", "log.dirs": t.TempDir(),
		"authorizer.class.name": StandardAuthorizerClass, "super.users": "User:admin",
		"allow.everyone.if.no.acl.found": "true",
	}
	cfg, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	b := loadingBackend{&aclBackend{stillBackend: stillBackend{wiretest.NewBackend()}, ctl: controller.New(1, nil)}, make(chan struct{})}
	close(b.Release)
	s := New(cfg, b, zerolog.New(zerolog.NewTestWriter(t)))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c := wiretest.Dial(t, s.Addr("CONTROLLER").String())
	unregister := kmsg.NewPtrUnregisterBrokerRequest()
	unregister.BrokerID = 2
	c.Send(unregister, 1)
	if _, resp := c.Recv(unregister); topCode(resp) != kerr.UnknownServerError.Code {
		t.Errorf("UnregisterBroker before the log is replayed: code %d, want UNKNOWN_SERVER_ERROR", topCode(resp))
	}
	av := kmsg.NewPtrApiVersionsRequest()
	c.Send(av, 2)
	if _, resp := c.Recv(av); resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
		t.Errorf("ApiVersions refused before the log is replayed: %d", resp.(*kmsg.ApiVersionsResponse).ErrorCode)
	}
	close(b.caughtUp)
	c.Send(unregister, 3)
	if _, resp := c.Recv(unregister); topCode(resp) == kerr.UnknownServerError.Code || topCode(resp) == kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("UnregisterBroker once replayed, with no ACL and allow.everyone.if.no.acl.found: code %d", topCode(resp))
	}
}
