package kit

import (
	"strings"
	"testing"
)

const goodLayout = `{"format_version":1,"cluster_id":"MkU3OEVBNTcwNTJENDM2Qg","kafka":"4.4.0",
"nodes":[{"id":1,"role":"kraftd-controller","port":9093,"pid":10},{"id":101,"role":"broker","port":9092}],"supervisor_pid":9}`

// A state file is read back as written, and a damaged one is refused with
// a reason.
func TestParseLayout(t *testing.T) {
	l, err := parseLayout([]byte(goodLayout))
	if err != nil {
		t.Fatal(err)
	}
	if l.ClusterID != "MkU3OEVBNTcwNTJENDM2Qg" || len(l.Nodes) != 2 || l.Nodes[1].Role != RoleBroker || l.SupervisorPID != 9 {
		t.Fatalf("parsed %+v", l)
	}
	for _, bad := range []struct{ from, to, want string }{
		{`"format_version":1`, `"format_version":2`, "format version 2"},
		{`"kafka":"4.4.0"`, `"kafka":"2.8.0"`, "3.9 to 4.4"},
		{`"cluster_id":"MkU3OEVBNTcwNTJENDM2Qg"`, `"cluster_id":"x"`, "not a Kafka Uuid"},
		{`"id":101`, `"id":1`, "node id 1 twice"},
		{`"port":9092`, `"port":70000`, "port 70000"},
		{`"role":"broker"`, `"role":"kraftd-controller"`, "0 brokers"},
		{`"role":"broker"`, `"role":"zookeeper"`, `role "zookeeper"`},
		{`"pid":10`, `"pid":-1`, "pid -1"},
		{`"kafka":"4.4.0"`, `"kafka":"4.4.0","sasl":"GSSAPI","sasl_password":"p"`, `SASL mechanism "GSSAPI"`},
		{`"kafka":"4.4.0"`, `"kafka":"4.4.0","sasl":"PLAIN"`, "a password of 0 characters"},
		{`}],`, `}`, "kit: cluster.json"},
	} {
		_, err := parseLayout([]byte(strings.Replace(goodLayout, bad.from, bad.to, 1)))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s -> %s: error %v, want one containing %q", bad.from, bad.to, err, bad.want)
		}
	}
}

// FuzzParseLayout: any bytes in a state file give a layout or an error,
// never a panic.
func FuzzParseLayout(f *testing.F) {
	f.Add([]byte(goodLayout))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"format_version":1,"nodes":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseLayout(b)
		if err == nil && (len(l.Nodes) == 0 || l.ClusterID == "") {
			t.Fatalf("accepted %q as %+v", b, l)
		}
	})
}
