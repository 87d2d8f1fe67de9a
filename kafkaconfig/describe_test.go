package kafkaconfig

import (
	"fmt"
	"strings"
	"testing"
)

// line renders an entry as kafka-configs --describe prints it.
func line(e Entry) string {
	v := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	var syns []string
	for _, s := range e.Synonyms {
		syns = append(syns, fmt.Sprintf("%d:%s=%s", s.Source, s.Name, v(s.Value)))
	}
	return fmt.Sprintf("%s=%s sensitive=%t source=%d readOnly=%t synonyms={%s}", e.Name, v(e.Value), e.Sensitive, e.Source, e.ReadOnly, strings.Join(syns, ", "))
}

func describeOwn(t *testing.T, releaseLine int, n Node) map[string]string {
	t.Helper()
	entries, refusal := For(releaseLine).Describe(n, fmt.Sprint(n.ID))
	if refusal != nil {
		t.Fatalf("refused: %+v", refusal)
	}
	got := map[string]string{}
	for i, e := range entries {
		if i > 0 && entries[i-1].Name >= e.Name {
			t.Fatalf("entries out of order: %s before %s", entries[i-1].Name, e.Name)
		}
		got[e.Name] = line(e)
	}
	return got
}

func TestEveryLineLoads(t *testing.T) {
	for _, l := range Lines {
		d := For(l)
		if d.Line != l || len(d.keys) < 250 || len(d.dynamic) < 50 || len(d.quota) != 3 {
			t.Errorf("line %d: %d keys, %d dynamic, %d quota keys", d.Line, len(d.keys), len(d.dynamic), len(d.quota))
		}
	}
	if For(30).Line != 39 || For(50).Line != 44 {
		t.Errorf("lines outside 3.9-4.4 are not clamped: %d %d", For(30).Line, For(50).Line)
	}
	// Facts read from Apache's source (docs/controller-describe-configs.md).
	if For(41).dynamic["config.providers"] || !For(44).dynamic["config.providers"] {
		t.Error("config.providers became dynamic in 4.4")
	}
	if k := For(41).keys["sasl.oauthbearer.expected.audience"]; k.Default != nil {
		t.Errorf("4.1 sasl.oauthbearer.expected.audience default %q, want null", *k.Default)
	}
	if k := For(44).keys["sasl.oauthbearer.expected.audience"]; k.Default == nil || *k.Default != "" {
		t.Error("4.4 sasl.oauthbearer.expected.audience default is not the empty list")
	}
}

func TestDescribeOwnConfig(t *testing.T) {
	n := Node{ID: 1, Static: map[string]string{
		"process.roles":                     "controller",
		"node.id":                           "1",
		"log.retention.ms":                  "5",
		"num.io.threads":                    " 08 ",
		"log.cleaner.io.buffer.load.factor": "0.50",
		"listener.name.controller.ssl.keystore.location": "/k",
		"sasl.enabled.mechanisms":                        "PLAIN , SCRAM-SHA-256",
		"foo":                                            "1",
		"ssl.keystore.password":                          "secret",
	}, ClusterDefault: map[string]string{"message.max.bytes": "2000000", "log.cleaner.threads": "2", "node.id": "7", "ssl.keystore.type": "PKCS12"},
		PerNode: map[string]string{"log.cleaner.threads": "3", "log.cleaner.backoff.ms": "x"}}
	got := describeOwn(t, 41, n)
	for _, want := range []string{
		"broker.id=1 sensitive=false source=4 readOnly=true synonyms={4:broker.id=1, 5:broker.id=-1}",
		"node.id=1 sensitive=false source=4 readOnly=true synonyms={4:node.id=1}",
		"log.retention.ms=5 sensitive=false source=4 readOnly=false synonyms={4:log.retention.ms=5, 5:log.retention.hours=168}",
		"log.retention.hours=168 sensitive=false source=5 readOnly=true synonyms={5:log.retention.hours=168}",
		"log.retention.minutes=null sensitive=false source=5 readOnly=true synonyms={}",
		"num.io.threads=8 sensitive=false source=4 readOnly=false synonyms={4:num.io.threads= 08 , 5:num.io.threads=8}",
		"log.cleaner.io.buffer.load.factor=0.5 sensitive=false source=4 readOnly=false synonyms={4:log.cleaner.io.buffer.load.factor=0.50, 5:log.cleaner.io.buffer.load.factor=0.9}",
		"listener.name.controller.ssl.keystore.location=/k sensitive=false source=4 readOnly=true synonyms={4:listener.name.controller.ssl.keystore.location=/k}",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256 sensitive=false source=4 readOnly=false synonyms={4:sasl.enabled.mechanisms=PLAIN , SCRAM-SHA-256, 5:sasl.enabled.mechanisms=GSSAPI}",
		"foo=null sensitive=true source=4 readOnly=true synonyms={4:foo=null}",
		"ssl.keystore.password=null sensitive=true source=4 readOnly=false synonyms={4:ssl.keystore.password=null}",
		"message.max.bytes=2000000 sensitive=false source=3 readOnly=false synonyms={3:message.max.bytes=2000000, 5:message.max.bytes=1048588}",
		"log.cleaner.threads=3 sensitive=false source=2 readOnly=false synonyms={2:log.cleaner.threads=3, 3:log.cleaner.threads=2, 5:log.cleaner.threads=1}",
		// An unparsable dynamic value and a non-dynamic or bare SSL key
		// at the cluster level are ignored, as Apache ignores them.
		"log.cleaner.backoff.ms=15000 sensitive=false source=5 readOnly=false synonyms={5:log.cleaner.backoff.ms=15000}",
		"ssl.keystore.type=JKS sensitive=false source=5 readOnly=false synonyms={5:ssl.keystore.type=JKS}",
		"ssl.cipher.suites= sensitive=false source=5 readOnly=false synonyms={5:ssl.cipher.suites=}",
		"log.flush.scheduler.interval.ms=9223372036854775807 sensitive=false source=5 readOnly=true synonyms={5:log.flush.scheduler.interval.ms=9223372036854775807}",
		"log.flush.interval.ms=null sensitive=false source=5 readOnly=false synonyms={}",
	} {
		name, _, _ := strings.Cut(want, "=")
		if got[name] != want {
			t.Errorf("got  %s\nwant %s", got[name], want)
		}
	}
	// Every KafkaConfig key but the internal ones is listed, and the
	// file's keys.
	d := For(41)
	for name, k := range d.keys {
		if _, listed := got[name]; listed == k.Internal {
			t.Errorf("%s (internal=%t) listed=%t", name, k.Internal, listed)
		}
	}
}

func TestDescribeClusterDefault(t *testing.T) {
	n := Node{ID: 1, ClusterDefault: map[string]string{"message.max.bytes": "2000000", "log.retention.ms": "9",
		"listeners": "X://:1", "listener.name.x.max.connections": "5", "listener.name.x.ssl.keystore.type": "PEM", "custom": "v"},
		PerNode: map[string]string{"log.retention.hours": "2"}}
	entries, refusal := For(44).Describe(n, "")
	if refusal != nil {
		t.Fatal(refusal)
	}
	var got []string
	for _, e := range entries {
		got = append(got, line(e))
	}
	want := []string{
		"custom=null sensitive=true source=3 readOnly=true synonyms={3:custom=null}",
		"listener.name.x.max.connections=5 sensitive=false source=3 readOnly=true synonyms={3:listener.name.x.max.connections=5}",
		"log.retention.ms=9 sensitive=false source=3 readOnly=false synonyms={3:log.retention.ms=9}",
		"message.max.bytes=2000000 sensitive=false source=3 readOnly=false synonyms={3:message.max.bytes=2000000}",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDescribeOtherNamesRefused(t *testing.T) {
	d := For(44)
	for name, want := range map[string]string{
		"2":  "Unexpected broker id, expected 1 or empty string, but received 2",
		"x":  "Broker id must be an integer, but it is: x",
		" 1": "Broker id must be an integer, but it is:  1",
	} {
		_, r := d.Describe(Node{ID: 1}, name)
		if r == nil || r.Code != 42 || r.Message != want {
			t.Errorf("%q: %+v, want INVALID_REQUEST %q", name, r, want)
		}
	}
	for _, name := range []string{"01", "+1"} {
		if _, r := d.Describe(Node{ID: 1}, name); r != nil {
			t.Errorf("%q refused (%s); Integer.parseInt reads it as 1", name, r.Message)
		}
	}
}

func TestJavaValues(t *testing.T) {
	for _, c := range []struct {
		raw  string
		typ  Type
		want string
		ok   bool
	}{
		{" TRUE ", TypeBoolean, "true", true}, {"yes", TypeBoolean, "", false},
		{"+5", TypeInt, "5", true}, {"2147483648", TypeInt, "", false}, {"2147483648", TypeLong, "2147483648", true},
		{"0.50", TypeDouble, "0.5", true}, {"10", TypeDouble, "10.0", true}, {"1e7", TypeDouble, "1.0E7", true},
		{"0.0001", TypeDouble, "1.0E-4", true}, {"1.5f", TypeDouble, "1.5", true}, {"123456.789", TypeDouble, "123456.789", true},
		{"-0", TypeDouble, "-0.0", true}, {"inf", TypeDouble, "", false}, {"NaN", TypeDouble, "NaN", true},
		{"a , b,,", TypeList, "a,b,,", true}, {"  ", TypeList, "", true},
		{"\t x \u0001", TypeString, "x", true},
	} {
		got, ok := JavaValue(c.raw, c.typ)
		if got != c.want || ok != c.ok {
			t.Errorf("JavaValue(%q, %d) = %q, %t; want %q, %t", c.raw, c.typ, got, ok, c.want, c.ok)
		}
	}
}

// FuzzDescribe: whatever the file and the image hold, describing never
// panics, lists entries in order once each, and never shows a sensitive
// value.
func FuzzDescribe(f *testing.F) {
	f.Add("log.retention.ms", "5", "listener.name.a.sasl.jaas.config", "x", "message.max.bytes", "1.5", "1", uint8(44))
	f.Add("node.id", "2", "ssl.key.password", "p", "listener.name.a.max.connections", "x", "", uint8(39))
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3, resource string, line uint8) {
		n := Node{ID: 1, Static: map[string]string{k1: v1}, PerNode: map[string]string{k2: v2}, ClusterDefault: map[string]string{k3: v3, k1: v2}}
		entries, _ := For(int(line)).Describe(n, resource)
		for i, e := range entries {
			if i > 0 && entries[i-1].Name >= e.Name {
				t.Fatalf("%s listed after %s", e.Name, entries[i-1].Name)
			}
			if e.Sensitive && e.Value != nil {
				t.Fatalf("sensitive %s shows a value", e.Name)
			}
			for _, s := range e.Synonyms {
				if e.Sensitive && s.Value != nil {
					t.Fatalf("sensitive %s's synonym %s shows a value", e.Name, s.Name)
				}
			}
		}
	})
}
