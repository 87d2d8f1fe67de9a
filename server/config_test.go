package server

import (
	"errors"
	"strings"
	"testing"
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
