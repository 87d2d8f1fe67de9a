package compat

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// MainClusterTool is kafka-cluster.sh's main class.
const MainClusterTool = "org.apache.kafka.tools.ClusterTool"

// adminBroker is one Apache broker of the admin-tools cluster: PLAINTEXT
// for the tools, SASL_PLAINTEXT with SCRAM-SHA-512 for clients holding a
// credential written through kafka-configs.
type adminBroker struct {
	*ApacheBroker
	SASLAddr string
}

// checkAdminTools is the AdminTools step of TestApacheBrokersOnKraftd:
// Apache's admin tools that change cluster metadata, run through the
// brokers of the shared cluster (PLAINTEXT for the tools, SASL_PLAINTEXT
// with SCRAM-SHA-512 for clients), each check in turn:
//   - ClientQuotas: kafka-configs --entity-type users|clients|ips
//     --alter/--describe sets client quotas, a producer_byte_rate quota
//     throttles a franz-go producer (seen in the produce responses'
//     throttle time), and AlterClientQuotas sent to kraftd directly is
//     served too;
//   - SCRAM: kafka-configs --add-config 'SCRAM-SHA-512=[...]' makes a user
//     who then authenticates on a broker's SASL listener, and
//     --delete-config removes it again;
//   - Tokens: kafka-delegation-tokens --create/--describe/--renew/--expire
//     as a SCRAM user, and a client authenticates with the token until it
//     is expired;
//   - GroupConfigs and Loggers: group and client metrics configs, and a
//     kraftd controller's log level (admin_group_tools_test.go);
//   - the reassignment and election checks of reassign_test.go
//     (kafka-reassign-partitions, kafka-leader-election), under produce
//     traffic that loses nothing acknowledged;
//   - Unregister: kafka-cluster unregister removes the registration of the
//     broker the unclean-election check left dead.
//
// At the end it removes the user-default controller_mutation_rate quota
// ClientQuotas set, so that it throttles no later step's creates. Broker
// 101 stays down and unregistered, 103 runs again.
func checkAdminTools(t *testing.T, c *brokerCluster) {
	v, ctls, brokers, set := c.v, c.ctls, c.admin, c.brokers
	at := stamp(t)
	t.Run("ClientQuotas", func(t *testing.T) { checkQuotaTools(t, v, ctls, brokers) })
	at("client quotas")
	t.Run("SCRAM", func(t *testing.T) { checkScramTools(t, v, brokers) })
	at("SCRAM users")
	t.Run("Tokens", func(t *testing.T) { checkTokenTools(t, v, brokers) })
	at("delegation tokens")
	t.Run("GroupConfigs", func(t *testing.T) { checkGroupConfigTools(t, v, ctls[0], brokers) })
	at("group configs and client metrics subscriptions")
	t.Run("Loggers", func(t *testing.T) { checkLoggerTools(t, v, ctls[1]) })
	at("a controller's log level")
	checkReassignAndElect(t, v, ctls, set, at)
	t.Run("Unregister", func(t *testing.T) { checkUnregister(t, v, set.Broker(101), brokers[1]) })
	at("kafka-cluster unregister")
	removeDefaultUserQuotas(t, brokers[1].Addr())
	at("user-default quota removed")
}

// startAdminBrokers starts the brokers with a SASL_PLAINTEXT listener whose
// SCRAM-SHA-512 credentials come from the metadata image.
func startAdminBrokers(t *testing.T, v, voters, clusterID string, ids []int) ([]*adminBroker, *BrokerSet) {
	t.Helper()
	var out []*adminBroker
	set := &BrokerSet{Version: v}
	for _, id := range ids {
		ports := FreePorts(t, 2)
		props := map[string]string{
			"listeners":                      "PLAINTEXT://" + Addr(ports[0]) + ",SASL_PLAINTEXT://" + Addr(ports[1]),
			"advertised.listeners":           "PLAINTEXT://" + Addr(ports[0]) + ",SASL_PLAINTEXT://" + Addr(ports[1]),
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
			"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
			"delegation.token.secret.key":                                 adminTokenSecret,
		}
		b := NewApacheBroker(t, v, id, voters, props)
		b.Port = ports[0]
		b.Format(t, clusterID)
		out = append(out, &adminBroker{ApacheBroker: b, SASLAddr: Addr(ports[1])})
		set.Brokers = append(set.Brokers, b)
	}
	for _, b := range out {
		b.Start(t)
	}
	// Two JVMs starting beside the other tests' can take minutes on the
	// shared machine: wait longer than ReadyTimeout.
	Eventually(t, 3*ReadyTimeout, "brokers unfenced", nil, func() error {
		m, err := set.Metadata()
		if err != nil {
			return err
		}
		if len(m.Brokers) != len(ids) {
			return fmt.Errorf("brokers %v unfenced, want %v", m.Brokers, ids)
		}
		return nil
	})
	return out, set
}

// configsTool runs kafka-configs with args after --bootstrap-server (or
// whatever bootstrap flag args start with).
func configsTool(t *testing.T, v string, args ...string) string {
	t.Helper()
	out, err := toolOutput(t, v, ConfigCommandClass(v), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkQuotaTools sets quotas on every entity kind through a broker, reads
// them back, and sees a producer throttled by one. Each tool run is a JVM
// start, so the waits for the broker to learn a change ask it directly
// (DescribeClientQuotas) and the tools describe once.
func checkQuotaTools(t *testing.T, v string, ctls []*kraftdNode, brokers []*adminBroker) {
	t.Helper()
	bs := []string{"--bootstrap-server", brokers[0].Addr()}
	configs := func(entity []string, args ...string) string {
		t.Helper()
		return configsTool(t, v, append(append(append([]string{}, bs...), entity...), args...)...)
	}
	alter := func(entity []string, config string) {
		t.Helper()
		if out := configs(entity, "--alter", "--add-config", config); !strings.Contains(out, "Completed updating") {
			t.Errorf("kafka-configs %v --add-config %s printed %q", entity, config, out)
		}
	}
	const throttledClient = "throttled-producer"
	aliceApp := []string{"--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app"}
	alter(aliceApp, "producer_byte_rate=1048576,request_percentage=12.5")
	alter([]string{"--entity-type", "users", "--entity-default"}, "controller_mutation_rate=10")
	alter([]string{"--entity-type", "ips", "--entity-name", "127.0.0.1"}, "connection_creation_rate=1000")
	alter([]string{"--entity-type", "clients", "--entity-name", throttledClient}, "producer_byte_rate=1024")

	// Directly to the controller, without a broker in between: Apache's
	// admin client refuses AlterClientQuotas with --bootstrap-controller
	// ("not yet supported when communicating directly with the controller
	// quorum"), so the request is sent by hand, then read through a broker.
	leader := WaitLeader(t, Addrs(ctls...), nil)
	if code, msg := alterQuotaRaw(t, nodeByID(ctls, leader.LeaderID).Addr(), "client-id", "direct", "request_percentage", 50); code != 0 {
		t.Errorf("AlterClientQuotas sent to kraftd: %d %s", code, msg)
	}
	// Refused as Apache refuses, forwarded: a key of another entity kind.
	if code, msg := alterQuotaRaw(t, brokers[0].Addr(), "ip", "127.0.0.2", "producer_byte_rate", 10); code != kerr.InvalidRequest.Code || !strings.Contains(msg, "Invalid configuration key producer_byte_rate") {
		t.Errorf("producer_byte_rate on an ip entity through a broker: %d %q", code, msg)
	}
	waitBrokerQuotas(t, brokers[0].Addr(), 5)

	// A describe without a name lists the entities of exactly that kind
	// (Apache's filter is strict), so the user and client-id pair is
	// described by name.
	describes := []struct {
		entity []string
		want   []string
	}{
		{aliceApp, []string{"user-principal 'alice', client-id 'app'", "producer_byte_rate=1048576.0", "request_percentage=12.5"}},
		{[]string{"--entity-type", "users"}, []string{"the default user-principal", "controller_mutation_rate=10.0"}},
		{[]string{"--entity-type", "clients"}, []string{"client-id 'direct'", "request_percentage=50.0", "client-id '" + throttledClient + "'", "producer_byte_rate=1024.0"}},
		{[]string{"--entity-type", "ips"}, []string{"ip '127.0.0.1'", "connection_creation_rate=1000.0"}},
	}
	for _, d := range describes {
		out := configs(d.entity, "--describe")
		for _, w := range d.want {
			if !strings.Contains(out, w) {
				t.Errorf("kafka-configs %v --describe lacks %q:\n%s", d.entity, w, out)
			}
		}
	}

	checkProduceThrottled(t, brokers, throttledClient)
	configs([]string{"--entity-type", "clients", "--entity-name", throttledClient}, "--alter", "--delete-config", "producer_byte_rate")
	waitBrokerQuotas(t, brokers[0].Addr(), 4)
}

// alterQuotaRaw sends one AlterClientQuotas entry to addr and returns its
// error code and message.
func alterQuotaRaw(t *testing.T, addr, typ, name, key string, value float64) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.SetVersion(1)
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{{
		Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: typ, Name: &name}},
		Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: key, Value: value}},
	}}
	resp, err := Request(addr, req)
	if err != nil {
		t.Fatal(err)
	}
	e := resp.(*kmsg.AlterClientQuotasResponse).Entries
	if len(e) != 1 {
		t.Fatalf("AlterClientQuotas: %d entries answered", len(e))
	}
	msg := ""
	if e[0].ErrorMessage != nil {
		msg = *e[0].ErrorMessage
	}
	return e[0].ErrorCode, msg
}

// waitBrokerQuotas waits until the broker at addr describes n quota
// entities (it learns them from the metadata log).
func waitBrokerQuotas(t *testing.T, addr string, n int) {
	t.Helper()
	Eventually(t, ReadyTimeout, fmt.Sprintf("the broker describes %d quota entities", n), nil, func() error {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.SetVersion(1)
		resp, err := Request(addr, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.DescribeClientQuotasResponse)
		if r.ErrorCode != 0 || len(r.Entries) != n {
			return fmt.Errorf("error %d, %d entities", r.ErrorCode, len(r.Entries))
		}
		return nil
	})
}

// defaultUserQuotas asks the broker at addr for the quotas of the default
// user alone (the entity kafka-configs --entity-type users --entity-default
// sets).
func defaultUserQuotas(addr string) ([]kmsg.DescribeClientQuotasResponseEntryValue, error) {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.SetVersion(1)
	req.Strict = true
	req.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 1}}
	resp, err := Request(addr, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.DescribeClientQuotasResponse)
	if r.ErrorCode != 0 {
		return nil, fmt.Errorf("DescribeClientQuotas: error %d %s", r.ErrorCode, deref(r.ErrorMessage))
	}
	var out []kmsg.DescribeClientQuotasResponseEntryValue
	for _, e := range r.Entries {
		out = append(out, e.Values...)
	}
	return out, nil
}

// removeDefaultUserQuotas removes every quota of the default user
// (AlterClientQuotas through the broker at addr) and waits until that
// broker describes none: a controller_mutation_rate there would throttle
// every later create of topics and partitions.
func removeDefaultUserQuotas(t *testing.T, addr string) {
	t.Helper()
	values, err := defaultUserQuotas(addr)
	if err != nil {
		t.Fatal(err)
	}
	if len(values) == 0 {
		return
	}
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.SetVersion(1)
	entry := kmsg.AlterClientQuotasRequestEntry{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user"}}} // no name: the default
	for _, q := range values {
		entry.Ops = append(entry.Ops, kmsg.AlterClientQuotasRequestEntryOp{Key: q.Key, Remove: true})
	}
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{entry}
	resp, err := Request(addr, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.(*kmsg.AlterClientQuotasResponse).Entries {
		if e.ErrorCode != 0 {
			t.Fatalf("removing the default user's quotas: error %d %s", e.ErrorCode, deref(e.ErrorMessage))
		}
	}
	Eventually(t, ReadyTimeout, "the default user's quotas gone from the broker", nil, func() error {
		values, err := defaultUserQuotas(addr)
		if err != nil {
			return err
		}
		if len(values) != 0 {
			return fmt.Errorf("still described: %+v", values)
		}
		return nil
	})
}

// checkProduceThrottled produces 64 KiB as client id, whose quota is
// 1 KiB/s, until a produce response carries a throttle time: the broker
// learns the quota from the metadata log.
func checkProduceThrottled(t *testing.T, brokers []*adminBroker, clientID string) {
	t.Helper()
	topic := "quota-" + clientID
	createTopic(t, brokers[0].Addr(), topic, 1, 2)
	var throttle atomic.Int64
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[0].Addr()), kgo.ClientID(clientID), kgo.DefaultProduceTopic(topic),
		kgo.WithHooks(throttleHook{&throttle}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := strings.Repeat("q", 8<<10)
	Eventually(t, ReadyTimeout, "a produce response throttled by the quota", nil, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var recs []*kgo.Record
		for range 8 {
			recs = append(recs, kgo.StringRecord(value))
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return err
		}
		if throttle.Load() == 0 {
			return fmt.Errorf("no produce response throttled yet")
		}
		return nil
	})
	t.Logf("produce throttled for %v by producer_byte_rate=1024", time.Duration(throttle.Load()))
}

// throttleHook keeps the longest throttle any response carried.
type throttleHook struct{ max *atomic.Int64 }

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	for {
		old := h.max.Load()
		if int64(d) <= old || h.max.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// createTopic creates a topic through a broker, which forwards it.
func createTopic(t *testing.T, addr, name string, partitions int32, rf int16) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	Eventually(t, ReadyTimeout, "create topic "+name, nil, func() error {
		resp, err := Request(addr, req)
		if err != nil {
			return err
		}
		if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 && code != 36 { // 36: exists
			return fmt.Errorf("error code %d", code)
		}
		return nil
	})
}

// checkScramTools writes a SCRAM-SHA-512 user with kafka-configs and
// authenticates as it on a broker's SASL listener, then deletes it.
func checkScramTools(t *testing.T, v string, brokers []*adminBroker) {
	t.Helper()
	bs := []string{"--bootstrap-server", brokers[0].Addr()}
	carol := []string{"--entity-type", "users", "--entity-name", "carol"}
	out := configsTool(t, v, append(append(append([]string{}, bs...), carol...), "--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=carol-secret]")...)
	if !strings.Contains(out, "Completed updating config") {
		t.Errorf("kafka-configs SCRAM-SHA-512 printed %q", out)
	}
	// Each tool run is a JVM start: wait until every broker (the tool's
	// admin client may ask any) describes the credential, then describe
	// once.
	waitEveryBroker(t, adminAddrs(brokers), "carol's SCRAM credential described", func(addr string) error {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "carol"}}
		resp, err := Request(addr, req)
		if err != nil {
			return err
		}
		for _, r := range resp.(*kmsg.DescribeUserSCRAMCredentialsResponse).Results {
			for _, c := range r.CredentialInfos {
				if r.User == "carol" && r.ErrorCode == 0 && c.Mechanism == 2 && c.Iterations == 8192 {
					return nil
				}
			}
		}
		return fmt.Errorf("no SCRAM-SHA-512 credential of 8192 iterations for carol: %+v", resp)
	})
	if out := configsTool(t, v, append(append(append([]string{}, bs...), carol...), "--describe")...); !strings.Contains(out, "SCRAM-SHA-512=iterations=8192") {
		t.Errorf("kafka-configs --describe of carol: %s", out)
	}
	topic := "scram-carol"
	createTopic(t, brokers[0].Addr(), topic, 1, 2)
	auth := func(password string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[1].SASLAddr), kgo.DefaultProduceTopic(topic),
			kgo.SASL(scram.Auth{User: "carol", Pass: password}.AsSha512Mechanism()), kgo.RequestRetries(0))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, kgo.StringRecord("from carol")).FirstErr()
	}
	Eventually(t, ReadyTimeout, "carol authenticates with SCRAM-SHA-512 and produces", nil, func() error { return auth("carol-secret") })
	// Refusals are checked with a login alone: a producer whose login
	// fails retries until its deadline.
	if err := scramLogin(brokers[1].SASLAddr, scram.Auth{User: "carol", Pass: "not-carols-password"}); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	configsTool(t, v, append(append(append([]string{}, bs...), carol...), "--alter", "--delete-config", "SCRAM-SHA-512")...)
	Eventually(t, ReadyTimeout, "carol's credential gone from the broker", nil, func() error {
		if err := scramLogin(brokers[1].SASLAddr, scram.Auth{User: "carol", Pass: "carol-secret"}); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			return fmt.Errorf("carol's login: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		return nil
	})
}

// checkUnregister removes the registration of gone, a broker already
// down, with kafka-cluster unregister through via; via stops listing it.
func checkUnregister(t *testing.T, v string, gone *ApacheBroker, via *adminBroker) {
	t.Helper()
	if !describedBroker(t, via.Addr(), int32(gone.NodeID)) {
		t.Errorf("broker %d not listed among the fenced brokers before it was unregistered", gone.NodeID)
	}
	out, err := toolOutput(t, v, MainClusterTool, "unregister", "--bootstrap-server", via.Addr(), "--id", fmt.Sprint(gone.NodeID))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kafka-cluster unregister: %s", strings.TrimSpace(out))
	Eventually(t, ReadyTimeout, "the unregistered broker no longer described", nil, func() error {
		if describedBroker(t, via.Addr(), int32(gone.NodeID)) {
			return fmt.Errorf("broker %d still listed", gone.NodeID)
		}
		return nil
	})
	unknown := kmsg.NewPtrUnregisterBrokerRequest()
	unknown.BrokerID = 999
	resp, err := Request(via.Addr(), unknown)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.UnregisterBrokerResponse).ErrorCode; code != kerr.BrokerIDNotRegistered.Code {
		t.Errorf("unregistering a broker never registered, through a broker: error %d", code)
	}
}

// describedBroker reports whether DescribeCluster v2, which lists fenced
// brokers too, names broker id: a stopped broker stays listed until its
// registration is gone.
func describedBroker(t *testing.T, addr string, id int32) bool {
	t.Helper()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.SetVersion(2)
	req.IncludeFencedBrokers = true
	resp, err := Request(addr, req)
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	for _, b := range resp.(*kmsg.DescribeClusterResponse).Brokers {
		if b.NodeID == id {
			return true
		}
	}
	return false
}

// MainDelegationTokens is kafka-delegation-tokens.sh's main class.
const MainDelegationTokens = "org.apache.kafka.tools.DelegationTokenCommand"

// adminTokenSecret is delegation.token.secret.key on kraftd and the
// brokers alike: the brokers derive each token's password from it.
const adminTokenSecret = "admin-tools-token-secret"

// checkTokenTools creates, describes, renews and expires a delegation token
// with kafka-delegation-tokens on a broker's SASL listener as a SCRAM user,
// and authenticates with the token (SCRAM with tokenauth=true) while it
// lives.
func checkTokenTools(t *testing.T, v string, brokers []*adminBroker) {
	t.Helper()
	bs := []string{"--bootstrap-server", brokers[0].Addr()}
	dan := []string{"--entity-type", "users", "--entity-name", "dan"}
	configsTool(t, v, append(append(append([]string{}, bs...), dan...), "--alter", "--add-config", "SCRAM-SHA-512=[password=dan-secret]")...)
	props := filepath.Join(t.TempDir(), "dan.properties")
	writeFile(t, props, []byte(FormatProperties(map[string]string{
		"security.protocol": "SASL_PLAINTEXT",
		"sasl.mechanism":    "SCRAM-SHA-512",
		"sasl.jaas.config":  `org.apache.kafka.common.security.scram.ScramLoginModule required username="dan" password="dan-secret";`,
	})))
	tokens := func(args ...string) (string, error) {
		t.Helper()
		return toolOutput(t, v, MainDelegationTokens, append([]string{"--bootstrap-server", brokers[0].SASLAddr, "--command-config", props}, args...)...)
	}
	// Each tool run is a JVM start: wait until dan logs in on the broker
	// the tool talks to (it learns the credential from the metadata log),
	// then create once.
	Eventually(t, ReadyTimeout, "dan authenticates with SCRAM-SHA-512", nil, func() error {
		return scramLogin(brokers[0].SASLAddr, scram.Auth{User: "dan", Pass: "dan-secret"})
	})
	out, err := tokens("--create", "--max-life-time-period", "-1")
	if err != nil {
		t.Fatalf("kafka-delegation-tokens --create as dan: %v\n%s", err, out)
	}
	id, mac := parseCreatedToken(out)
	if id == "" || mac == "" {
		t.Fatalf("kafka-delegation-tokens --create printed no token:\n%s", out)
	}
	t.Logf("token %s created", id)
	topic := "token-dan"
	createTopic(t, brokers[0].Addr(), topic, 1, 2)
	tokenAuth := scram.Auth{User: id, Pass: mac, IsToken: true}
	auth := func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers[1].SASLAddr), kgo.DefaultProduceTopic(topic),
			kgo.SASL(tokenAuth.AsSha512Mechanism()), kgo.RequestRetries(0))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, kgo.StringRecord("with dan's token")).FirstErr()
	}
	Eventually(t, ReadyTimeout, "a client authenticates with the token", nil, auth)
	// Every broker learns the token from the metadata log, maybe after the
	// tool's answer, and the tool's admin client may ask any of them: wait
	// until the token lets a client log in on each (the login and the
	// describe read the same token cache), then describe once.
	var saslAddrs []string
	for _, b := range brokers {
		saslAddrs = append(saslAddrs, b.SASLAddr)
	}
	waitEveryBroker(t, saslAddrs, "every broker knows the token", func(addr string) error { return scramLogin(addr, tokenAuth) })
	// Without --owner-principal the tool asks for the tokens of no owner
	// (an empty list, which the broker answers with none), though it
	// prints "for current user".
	if out, err := tokens("--describe", "--owner-principal", "User:dan"); err != nil || !strings.Contains(out, id) || !strings.Contains(out, "User:dan") {
		t.Errorf("kafka-delegation-tokens --describe does not list the token (%v):\n%s", err, out)
	}
	if out, err := tokens("--renew", "--hmac", mac, "--renew-time-period", "-1"); err != nil || !strings.Contains(out, "Completed renew operation") {
		t.Errorf("kafka-delegation-tokens --renew (%v):\n%s", err, out)
	}
	if out, err := tokens("--expire", "--hmac", mac, "--expiry-time-period", "-1"); err != nil || !strings.Contains(out, "Completed expire operation") {
		t.Errorf("kafka-delegation-tokens --expire (%v):\n%s", err, out)
	}
	Eventually(t, ReadyTimeout, "the expired token refused", nil, func() error {
		if err := scramLogin(brokers[1].SASLAddr, tokenAuth); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			return fmt.Errorf("a login with the token: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		return nil
	})
}

// scramLogin authenticates with SCRAM-SHA-512 on a SASL_PLAINTEXT
// listener and sends one request there (Metadata).
func scramLogin(addr string, auth scram.Auth) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(auth.AsSha512Mechanism()), kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

// adminAddrs are the brokers' PLAINTEXT addresses.
func adminAddrs(brokers []*adminBroker) []string {
	var out []string
	for _, b := range brokers {
		out = append(out, b.Addr())
	}
	return out
}

// parseCreatedToken reads the token id and HMAC from the table
// kafka-delegation-tokens --create prints (TOKENID HMAC OWNER ..., a blank line between the header and the row).
func parseCreatedToken(out string) (id, mac string) {
	header := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "TOKENID":
			header = true
		case header && len(f) >= 2:
			return f[0], f[1]
		}
	}
	return "", ""
}
