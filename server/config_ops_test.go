package server

import (
	"errors"
	"strings"
	"testing"
)

func TestOpsSettings(t *testing.T) {
	c, err := ParseConfig(baseProps())
	if err != nil {
		t.Fatal(err)
	}
	if c.Ops.MetricsAddr != "" || c.Ops.Pprof || c.Ops.ReadyMaxContactAgeMs != 1000 || c.Ops.ReadyMaxLagRecords != 10000 || !c.SnapshotGzip {
		t.Fatalf("defaults: %+v, gzip snapshots %v", c.Ops, c.SnapshotGzip)
	}
	p := baseProps()
	p["kraftd.metadata.snapshot.compression.type"] = "none"
	if c, err = ParseConfig(p); err != nil || c.SnapshotGzip {
		t.Fatalf("compression none: gzip %v, %v", c.SnapshotGzip, err)
	}
	p = baseProps()
	p["kraftd.metrics.listener"] = "http://127.0.0.1:9404"
	p["kraftd.metrics.pprof.enable"] = "true"
	p["kraftd.readiness.max.contact.age.ms"] = "2500"
	if c, err = ParseConfig(p); err != nil {
		t.Fatal(err)
	}
	if c.Ops.MetricsAddr != "127.0.0.1:9404" || !c.Ops.Pprof || c.Ops.ReadyMaxContactAgeMs != 2500 {
		t.Fatalf("%+v", c.Ops)
	}
	p["kraftd.metrics.listener"] = "http://[::1]:0/"
	if c, err = ParseConfig(p); err != nil || c.Ops.MetricsAddr != "[::1]:0" {
		t.Fatalf("%+v %v", c, err)
	}

	for _, tc := range []struct {
		props map[string]string
		key   string
		says  string
	}{
		{map[string]string{"kraftd.metrics.listener": "127.0.0.1:9404"}, "kraftd.metrics.listener", "http://127.0.0.1:9404"},
		{map[string]string{"kraftd.metrics.listener": "https://127.0.0.1:9404"}, "kraftd.metrics.listener", "only http://"},
		{map[string]string{"kraftd.metrics.listener": "http://127.0.0.1"}, "kraftd.metrics.listener", "no host:port"},
		{map[string]string{"kraftd.metrics.listener": "http://:9404"}, "kraftd.metrics.listener", "no host:port"},
		{map[string]string{"kraftd.metrics.listener": "http://127.0.0.1:99999"}, "kraftd.metrics.listener", "from 0 to 65535"},
		{map[string]string{"kraftd.metrics.listener": "http://127.0.0.1:9404/metrics"}, "kraftd.metrics.listener", "only http://host:port"},
		{map[string]string{"kraftd.metrics.pprof.enable": "true"}, "kraftd.metrics.pprof.enable", "is not set"},
		{map[string]string{"kraftd.metrics.pprof.enable": "yes"}, "kraftd.metrics.pprof.enable", "neither true nor false"},
		{map[string]string{"kraftd.readiness.max.contact.age.ms": "0"}, "kraftd.readiness.max.contact.age.ms", "below the minimum"},
		{map[string]string{"kraftd.metrics.listner": "http://127.0.0.1:9404"}, "kraftd.metrics.listner", "not a kraftd key"},
		{map[string]string{"kraftd.metadata.snapshot.compression.type": "lz4"}, "kraftd.metadata.snapshot.compression.type", "not gzip or none"},
	} {
		p := baseProps()
		for k, v := range tc.props {
			p[k] = v
		}
		_, err := ParseConfig(p)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: got %v, want an error on %s saying %q", tc.props, err, tc.key, tc.says)
		}
	}
}

// TestSilenceSettings: the failure detector's keys, their defaults, the
// refusal of a bound too short for the fetch wait, and a bound not below
// the fetch timeout turned off.
func TestSilenceSettings(t *testing.T) {
	c, err := ParseConfig(baseProps())
	if err != nil || c.SilenceTimeoutMs != 350 || c.FetchMaxWaitMs != 25 {
		t.Fatalf("defaults: silence %d, wait %d, %v", c.SilenceTimeoutMs, c.FetchMaxWaitMs, err)
	}
	p := baseProps()
	p["controller.quorum.fetch.timeout.ms"] = "300"
	if c, err = ParseConfig(p); err != nil || c.SilenceTimeoutMs != 0 {
		t.Fatalf("a fetch timeout below the bound: silence %d, %v", c.SilenceTimeoutMs, err)
	}
	p = baseProps()
	p["kraftd.quorum.silence.timeout.ms"] = "0"
	if c, err = ParseConfig(p); err != nil || c.SilenceTimeoutMs != 0 {
		t.Fatalf("off: silence %d, %v", c.SilenceTimeoutMs, err)
	}
	p = baseProps()
	p["kraftd.quorum.fetch.max.wait.ms"] = "200"
	_, err = ParseConfig(p)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "kraftd.quorum.silence.timeout.ms" || !strings.Contains(err.Error(), "under 3 × kraftd.quorum.fetch.max.wait.ms") {
		t.Fatalf("a wait too long for the bound: %v", err)
	}
}
