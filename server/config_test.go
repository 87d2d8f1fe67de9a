package server

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/kafkaconfig"
)

func TestParsePropertiesJavaRules(t *testing.T) {
	in := "# comment\n! bang comment\nnode.id=3\nprocess.roles : controller\nlisteners CONTROLLER://127.0.0.1:9093\n" +
		"controller.quorum.voters=1@127.0.0.1:9093,\\\n   2@127.0.0.1:9094\nempty=\nodd\\=key=x\\ty\n"
	props, err := ParseProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"node.id": "3", "process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:9093",
		"controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094", "empty": "", "odd=key": "x\ty",
	}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q", k, props[k], v)
		}
	}
	if len(props) != len(want) {
		t.Errorf("got %v", props)
	}
}

func baseProps() map[string]string {
	return map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://127.0.0.1:9093", "log.dirs": "/tmp/x",
		"controller.quorum.voters": "1@127.0.0.1:9093",
	}
}

func TestParseConfigDefaultsAndUnknownKeys(t *testing.T) {
	p := baseProps()
	p["num.network.threads"] = "3"
	c, err := ParseConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.MetadataLogDir != "/tmp/x" || c.FetchTimeoutMs != 2000 || c.ElectionTimeoutMs != 1000 || c.MaxFrameSize != 100<<20 {
		t.Fatalf("%+v", c)
	}
	if c.MaxConnections != 1<<31-1 || c.MaxConnectionsPerIP != 1<<31-1 || c.ConnMaxIdleMs != 600000 ||
		c.QueuedMaxRequests != 128 || c.QueuedMaxRequestBytes != 64<<20 {
		t.Fatalf("connection limits %+v", c)
	}
	if len(c.Unknown) != 1 || c.Unknown[0] != "num.network.threads" {
		t.Fatalf("unknown %v", c.Unknown)
	}
	if eps := c.ControllerEndpoints(); len(eps) != 1 || eps[0].String() != "CONTROLLER://127.0.0.1:9093" {
		t.Fatalf("%v", eps)
	}
}

func TestParseConfigErrorsNameTheKey(t *testing.T) {
	for key, value := range map[string]string{
		"process.roles":                       "broker,controller",
		"node.id":                             "abc",
		"controller.quorum.voters":            "1@nohostport",
		"listeners":                           "127.0.0.1:9093",
		"controller.quorum.fetch.timeout.ms":  "-5",
		"listener.security.protocol.map":      "CONTROLLER:KERBEROS",
		"controller.listener.names":           "OTHER",
		"controller.quorum.bootstrap.servers": "127.0.0.1:9093",
		"auto.leader.rebalance.enable":        "yes",
		"num.partitions":                      "0",
		"max.connections":                     "0",
		"max.connections.per.ip":              "4294967296",
		"connections.max.idle.ms":             "soon",
		"queued.max.requests":                 "0",
		"queued.max.request.bytes":            "1000",
	} {
		p := baseProps()
		p[key] = value
		_, err := ParseConfig(p)
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s=%s: %v", key, value, err)
			continue
		}
		if ce.Key != key && !(key == "controller.listener.names" && ce.Key == "listener.security.protocol.map") {
			t.Errorf("%s=%s: error names %s: %v", key, value, ce.Key, err)
		}
	}
}

// controller.quorum.auto.join.enable is read (off by default), not left
// among the unknown keys.
func TestParseConfigAutoJoin(t *testing.T) {
	p := baseProps()
	if c, err := ParseConfig(p); err != nil || c.AutoJoin {
		t.Fatalf("default: %v, auto-join %v", err, c != nil && c.AutoJoin)
	}
	p["controller.quorum.auto.join.enable"] = "true"
	c, err := ParseConfig(p)
	if err != nil || !c.AutoJoin || len(c.Unknown) != 0 {
		t.Fatalf("%v, %+v", err, c)
	}
	p["controller.quorum.auto.join.enable"] = "maybe"
	if _, err := ParseConfig(p); err == nil {
		t.Fatal("auto-join=maybe parsed")
	}
}

// Every default kraftd applies comes from package kafkaconfig; these are
// the values they had when each reader held its own.
func TestParseConfigDefaultsFromKafkaconfig(t *testing.T) {
	c, err := ParseConfig(baseProps())
	if err != nil {
		t.Fatal(err)
	}
	const day = 24 * 3600 * 1000
	for _, d := range []struct {
		name      string
		got, want int64
	}{
		{"election timeout", int64(c.ElectionTimeoutMs), 1000}, {"fetch timeout", int64(c.FetchTimeoutMs), 2000},
		{"election backoff", int64(c.ElectionBackoffMaxMs), 1000}, {"request timeout", int64(c.RequestTimeoutMs), 2000},
		{"retry backoff", int64(c.RetryBackoffMs), 20}, {"fetch max wait", int64(c.FetchMaxWaitMs), 25},
		{"silence timeout", int64(c.SilenceTimeoutMs), 350}, {"frame size", int64(c.MaxFrameSize), 100 << 20},
		{"segment bytes", c.SegmentBytes, 1 << 30}, {"segment ms", c.SegmentMs, 7 * day},
		{"retention bytes", c.MaxRetentionBytes, 100 << 20}, {"retention ms", c.MaxRetentionMs, 7 * day},
		{"snapshot bytes", c.SnapshotBytes, 20 << 20}, {"snapshot interval", c.SnapshotIntervalMs, 3600 * 1000},
		{"idle interval", int64(c.IdleIntervalMs), 500}, {"session timeout", int64(c.BrokerSessionTimeoutMs), 9000},
		{"heartbeat", int64(c.BrokerHeartbeatMs), 2000}, {"partitions", int64(c.NumPartitions), 1},
		{"replication factor", int64(c.DefaultReplicationFactor), 1}, {"imbalance check", int64(c.LeaderImbalanceCheckS), 300},
		{"auth delay", c.FailedAuthDelayMs, 100}, {"failed per address", int64(c.MaxFailedAuthPerAddress), 30},
		{"failed per principal", int64(c.MaxFailedAuthPerPrincipal), 10},
		{"contact age", c.Ops.ReadyMaxContactAgeMs, 1000}, {"lag records", c.Ops.ReadyMaxLagRecords, 10000},
		{"token lifetime", c.Tokens.MaxLifetime.Milliseconds(), 7 * day}, {"token expiry", c.Tokens.Expiry.Milliseconds(), day},
		{"token check", c.Tokens.ExpiryCheck.Milliseconds(), 3600 * 1000},
	} {
		if d.got != d.want {
			t.Errorf("%s: %d, want %d", d.name, d.got, d.want)
		}
	}
	if !c.SnapshotGzip || c.AutoJoin || c.UncleanLeaderElection || !c.AutoLeaderRebalance || c.Ops.Pprof || c.Ops.MetricsAddr != "" {
		t.Errorf("flags %+v", c)
	}
}

// The kraftd.* keys kafkaconfig defines are those the parser reads, and a
// misspelt one is refused naming them all.
func TestKraftdKeysAreThoseRead(t *testing.T) {
	c, err := ParseConfig(baseProps())
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	for k := range c.Read {
		if strings.HasPrefix(k, "kraftd.") {
			read = append(read, k)
		}
	}
	slices.Sort(read)
	if known := kafkaconfig.KraftdKeys(); !slices.Equal(read, known) {
		t.Fatalf("the parser reads %v; kafkaconfig defines %v", read, known)
	}
	p := baseProps()
	p["kraftd.metrics.listenr"] = "http://127.0.0.1:9404"
	_, err = ParseConfig(p)
	want := "config kraftd.metrics.listenr: is not a kraftd key (known: " + strings.Join(read, ", ") + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("%v, want %s", err, want)
	}
}
