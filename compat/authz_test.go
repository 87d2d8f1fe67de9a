package compat

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// aclCommandClass is kafka-acls.sh's main class (the tools jar of 4.1.2
// has it too, beside the core jar's Scala one).
func aclCommandClass(string) string { return "org.apache.kafka.tools.AclCommand" }

// Passwords of the authorization test's users.
const (
	authzAdminPassword = "admin-plain-password"
	authzAlicePassword = "alice-password"
)

// authzSuperUsers are the principals that work before any ACL: the
// controllers' and the broker's own (SCRAM users controller and broker),
// the harness and tools (admin), and the broker's PLAINTEXT listener,
// which the harness's own helpers use (ANONYMOUS).
const authzSuperUsers = "User:controller;User:broker;User:admin;User:ANONYMOUS"

// A mixed quorum of two kraftd controllers and one Apache controller over
// SASL_SSL (SCRAM for clients and brokers, PLAIN between the controllers)
// and an Apache broker of the same version, all with StandardAuthorizer,
// shared by every check:
//   - alice (SASL PLAIN on the broker's CLIENT listener) is refused
//     CreateTopics (the active controller checks it, forwarded in an
//     Envelope for alice), produce and consume while no ACL names her;
//   - alice (SCRAM, straight to each controller, kraftd and Apache) is
//     refused IncrementalAlterConfigs, UnregisterBroker,
//     ControllerRegistration, Vote, Fetch and UpdateFeatures with
//     CLUSTER_AUTHORIZATION_FAILED, which admin, a super user, is not;
//   - kafka-acls --add through the broker (CreateAcls forwarded to the
//     active controller) grants her a prefixed topic, a prefixed group and
//     ALTER on the cluster; --list shows them; then she creates, produces
//     and consumes, and every controller lets her UnregisterBroker past
//     its authorizer (each applied the replayed ACLs);
//   - the lead passes to the other implementation, and kafka-acls --remove
//     through it takes WRITE and the cluster's ALTER away: her produce is
//     refused again, and every controller refuses her UnregisterBroker;
//     --add through it grants the ALTER again, and every controller lets
//     her UnregisterBroker past its authorizer again.
func TestAuthorizerWithApacheBrokers(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 3) // the Apache controller, the broker, kafka-acls
		at := stamp(t)
		s := NewScramSASL(t)
		s.Plain = true // Apache's controllers cannot check each other's first votes with SCRAM
		props := s.ServerProps()
		props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
		props["super.users"] = authzSuperUsers
		formatArgs := append(s.FormatArgs(), "--add-scram", "SCRAM-SHA-512=[name=alice,password="+authzAlicePassword+"]")
		members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Version: v, Kinds: []string{KindKraftd, KindKraftd, KindApache},
			Props: props, KraftdProps: s.PKI.KraftdProps(), FormatArgs: formatArgs})
		s.UseFor(t, MixedAddrs(members...)...)
		StartMixed(t, members...)
		WaitMixedLeader(t, members, VotersCaughtUp(1))

		_, client := startAuthorizedBroker(t, v, s, members, clusterID)
		alice := authzClient(t, client, "alice", authzAlicePassword)
		at("quorum and broker up")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()

		if code := createTopicCode(ctx, t, alice, "orders-1"); code != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("alice's CreateTopics with no ACL: %s, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
		}
		if err := produceOne(ctx, alice, "orders-1"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("alice's produce with no ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		if err := consumeOne(t, client, "app-1", "orders-1", 15*time.Second); err == nil || !strings.Contains(err.Error(), "AUTHORIZATION_FAILED") {
			t.Errorf("alice's consume with no ACL: %v, want an authorization failure", err)
		}
		for _, m := range members {
			checkDirectRefusals(ctx, t, m, s.AdminPassword)
		}
		at("refusals without ACLs checked")

		adminProps := writeAuthzClientProps(t, "admin", authzAdminPassword)
		acls := func(args ...string) string {
			t.Helper()
			out, err := toolOutput(t, v, aclCommandClass(v), append([]string{"--bootstrap-server", client, "--command-config", adminProps}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		cur := WaitMixedLeader(t, members, VotersCaughtUp(0))
		first := MemberByID(members, cur.LeaderID)
		at(fmt.Sprintf("adding ACLs through %s", first))
		acls("--add", "--allow-principal", "User:alice", "--operation", "Create", "--operation", "Write", "--operation", "Read",
			"--topic", "orders-", "--resource-pattern-type", "prefixed")
		acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "app-", "--resource-pattern-type", "prefixed")
		acls("--add", "--allow-principal", "User:alice", "--operation", "Alter", "--cluster")
		list := acls("--list")
		for _, want := range []string{"name=orders-, patternType=PREFIXED", "name=app-, patternType=PREFIXED",
			"name=kafka-cluster, patternType=LITERAL", "principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW"} {
			if !strings.Contains(list, want) {
				t.Errorf("kafka-acls --list lacks %q:\n%s", want, list)
			}
		}

		waitFor(t, "alice may create a topic", func() error {
			if code := createTopicCode(ctx, t, alice, "orders-1"); code != 0 && code != kerr.TopicAlreadyExists.Code {
				return kerr.ErrorForCode(code)
			}
			return nil
		})
		waitFor(t, "alice may produce", func() error { return produceOne(ctx, alice, "orders-1") })
		if err := consumeOne(t, client, "app-1", "orders-1", time.Minute); err != nil {
			t.Errorf("alice's consume with READ on the topic and the group: %v", err)
		}
		waitAliceUnregister(ctx, t, s, members, true)
		at("grants followed everywhere")

		// The other implementation leads; the next ACL change goes through it.
		want := KindKraftd
		if first.Kind == KindKraftd {
			want = KindApache
		}
		cur = steerAndKill(t, members, first, want, cur)
		second := MemberByID(members, cur.LeaderID)
		first.Start(t)
		WaitAPIVersions(t, first.Addr(), first.Proc())
		WaitMixedLeader(t, members, VotersCaughtUp(cur.HighWatermark))
		at(fmt.Sprintf("the lead moved to %s", second))
		out := acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders-", "--resource-pattern-type", "prefixed")
		t.Logf("kafka-acls --remove: %s", strings.TrimSpace(out))
		acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Alter", "--cluster")
		waitFor(t, "alice's produce refused again", func() error {
			if err := produceOne(ctx, alice, "orders-1"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
				return fmt.Errorf("produce: %v", err)
			}
			return nil
		})
		waitAliceUnregister(ctx, t, s, members, false)
		at("removals followed everywhere")
		// And an ACL created through this leader is enforced by every controller.
		acls("--add", "--allow-principal", "User:alice", "--operation", "Alter", "--cluster")
		waitAliceUnregister(ctx, t, s, members, true)
		at("a grant through it followed everywhere")
	})
}

// waitAliceUnregister waits until every member answers alice's
// UnregisterBroker (of an unknown broker, straight to its listener) past
// its authorizer (allowed: BROKER_ID_NOT_REGISTERED from the active
// controller, NOT_CONTROLLER from the others) or, with allowed false,
// with CLUSTER_AUTHORIZATION_FAILED.
func waitAliceUnregister(ctx context.Context, t *testing.T, s *ScramSASL, members []*MixedMember, allowed bool) {
	t.Helper()
	for _, m := range members {
		UseSASL(t, m.Addr(), scram.Auth{User: "alice", Pass: authzAlicePassword}.AsSha512Mechanism())
		waitFor(t, fmt.Sprintf("%s applies alice's ALTER on the cluster (allowed %v)", m, allowed), func() error {
			code := unregisterCode(ctx, t, m.Addr())
			refused := code == kerr.ClusterAuthorizationFailed.Code
			switch {
			case allowed && refused, !allowed && !refused:
				return fmt.Errorf("alice's UnregisterBroker: %s", kerr.ErrorForCode(code))
			case allowed && code != kerr.BrokerIDNotRegistered.Code && code != kerr.NotController.Code:
				t.Errorf("%s: alice's UnregisterBroker with ALTER on the cluster: %s, want BROKER_ID_NOT_REGISTERED or NOT_CONTROLLER", m, kerr.ErrorForCode(code))
			}
			return nil
		})
		UseSASL(t, m.Addr(), scram.Auth{User: "admin", Pass: s.AdminPassword}.AsSha512Mechanism())
	}
}

// startAuthorizedBroker starts an Apache broker with StandardAuthorizer:
// SCRAM as "broker" to kraftd, a PLAINTEXT listener (ANONYMOUS, a super
// user) for the harness and a SASL_PLAINTEXT CLIENT listener with PLAIN
// users admin and alice. It returns the broker and the CLIENT address.
func startAuthorizedBroker(t *testing.T, v string, s *ScramSASL, controllers []*MixedMember, clusterID string) (*BrokerSet, string) {
	t.Helper()
	ports := FreePorts(t, 2)
	props := s.BrokerProps()
	maps.Copy(props, map[string]string{
		"listeners":                                    fmt.Sprintf("PLAINTEXT://%s,CLIENT://%s", Addr(ports[0]), Addr(ports[1])),
		"advertised.listeners":                         fmt.Sprintf("PLAINTEXT://%s,CLIENT://%s", Addr(ports[0]), Addr(ports[1])),
		"listener.security.protocol.map":               "CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
		"listener.name.client.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.client.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`user_admin="` + authzAdminPassword + `" user_alice="` + authzAlicePassword + `";`,
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           authzSuperUsers,
	})
	b := NewApacheBroker(t, v, 101, MixedVoters(controllers), props)
	b.Port = ports[0]
	b.Format(t, clusterID)
	b.Start(t)
	set := &BrokerSet{Version: v, Brokers: []*ApacheBroker{b}}
	set.WaitUnfenced(t, 101)
	return set, Addr(ports[1])
}

func writeAuthzClientProps(t *testing.T, user, password string) string {
	t.Helper()
	path := t.TempDir() + "/client.properties"
	writeFile(t, path, []byte(FormatProperties(map[string]string{
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
		"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="` + user + `" password="` + password + `";`,
	})))
	return path
}

func authzClient(t *testing.T, addr, user, password string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()),
		kgo.RecordDeliveryTimeout(20 * time.Second), kgo.RequestRetries(2)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopicCode(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 20000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	return resp.Topics[0].ErrorCode
}

func produceOne(ctx context.Context, cl *kgo.Client, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("authorized")}).FirstErr()
}

// consumeOne reads one record of topic as alice in group, or returns the
// first error the consumer reports within d.
func consumeOne(t *testing.T, addr, group, topic string, d time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: authzAlicePassword}.AsMechanism()),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	// Closed on return, so that it leaves the group before the next one joins.
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return errs[0].Err
		}
		if fs.NumRecords() > 0 {
			return nil
		}
	}
}

func waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after a minute", what, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func unregisterCode(ctx context.Context, t *testing.T, addr string) int16 {
	t.Helper()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = 999
	return directCode(ctx, t, addr, req)
}

// directCode sends req to addr (a controller listener, as the harness
// authenticates to it) and returns the top-level error code.
func directCode(ctx context.Context, t *testing.T, addr string, req kmsg.Request) int16 {
	t.Helper()
	c, err := Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	switch r := resp.(type) {
	case *kmsg.IncrementalAlterConfigsResponse:
		return r.Resources[0].ErrorCode
	case *kmsg.UnregisterBrokerResponse:
		return r.ErrorCode
	case *kmsg.ControllerRegistrationResponse:
		return r.ErrorCode
	case *kmsg.VoteResponse:
		return r.ErrorCode
	case *kmsg.FetchResponse:
		return r.ErrorCode
	case *kmsg.UpdateFeaturesResponse:
		return r.ErrorCode
	}
	t.Fatalf("unexpected %T", resp)
	return 0
}

// checkDirectRefusals sends the requests issue 15 opened with, and the
// other cluster requests, straight to a controller (kraftd or Apache) as alice (SCRAM, no ACL):
// each is refused with CLUSTER_AUTHORIZATION_FAILED; as admin (a super
// user) none is.
func checkDirectRefusals(ctx context.Context, t *testing.T, m *MixedMember, adminPassword string) {
	t.Helper()
	controller := m.Addr()
	iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	iac.ValidateOnly = true
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	value := "1"
	cfg.Name, cfg.Value = "log.retention.ms", &value
	res.Configs = append(res.Configs, cfg)
	iac.Resources = append(iac.Resources, res)
	unregister := kmsg.NewPtrUnregisterBrokerRequest()
	unregister.BrokerID = 999
	register := kmsg.NewPtrControllerRegistrationRequest()
	register.ControllerID = 9
	vote := kmsg.NewPtrVoteRequest()
	vote.SetVersion(1)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(13)
	features := kmsg.NewPtrUpdateFeaturesRequest()
	features.SetVersion(1)
	features.ValidateOnly = true
	requests := []kmsg.Request{iac, unregister, register, vote, fetch, features}
	UseSASL(t, controller, scram.Auth{User: "alice", Pass: authzAlicePassword}.AsSha512Mechanism())
	for _, req := range requests {
		if code := directCode(ctx, t, controller, req); code != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("alice's %s straight to %s: %s, want CLUSTER_AUTHORIZATION_FAILED", kmsg.NameForKey(req.Key()), m, kerr.ErrorForCode(code))
		}
	}
	UseSASL(t, controller, scram.Auth{User: "admin", Pass: adminPassword}.AsSha512Mechanism())
	for _, req := range []kmsg.Request{iac, unregister, features} {
		if code := directCode(ctx, t, controller, req); code == kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("admin's %s straight to %s: refused", kmsg.NameForKey(req.Key()), m)
		}
	}
}
