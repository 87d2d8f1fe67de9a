package compat

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/kraftd/kraftd/storage"
)

// ownConfig is what kafka-configs --bootstrap-controller prints of a
// controller's own configuration and of the cluster default, beside the
// file the controller was started with.
type ownConfig struct {
	who           string
	own, defaults map[string]describedConfig
	file          map[string]string
}

// describeOwnConfig runs kafka-configs --describe --all against controller
// m for its own id and for the cluster default.
func describeOwnConfig(t *testing.T, v string, m *MixedMember) ownConfig {
	t.Helper()
	b, err := os.ReadFile(m.ConfigFile())
	if err != nil {
		t.Fatal(err)
	}
	c := ownConfig{who: m.String(), file: storage.ParseJavaProperties(string(b))}
	base := []string{"--bootstrap-controller", m.Addr(), "--describe", "--all", "--entity-type", "brokers"}
	out := configsTool(t, v, append(base, "--entity-name", fmt.Sprint(m.ID))...)
	if c.own = parseDescribe(out); len(c.own) < 250 {
		t.Fatalf("%s described %d configs of its own:\n%s", m, len(c.own), out)
	}
	c.defaults = parseDescribe(configsTool(t, v, append(base, "--entity-default")...))
	return c
}

// compareOwnConfig checks that a controller describes its own
// configuration as another did (want, from an Apache controller), with the
// cluster defaults of round instead of round 0's: every key listed by
// one is listed by the other, with the same value, sensitivity and synonym
// sources, but for the keys either file sets differently (listeners,
// directories, ...) and the values the rounds changed.
func compareOwnConfig(t *testing.T, want, got ownConfig, round int) {
	t.Helper()
	_, d0 := brokerConfigsSet(0)
	_, dr := brokerConfigsSet(round)
	fileSpecific := func(name string) bool {
		wv, inWant := want.file[name]
		gv, inGot := got.file[name]
		return (inWant || inGot) && (wv != gv || !inWant || !inGot) || name == "broker.id" || name == "node.id"
	}
	compared := 0
	for _, name := range slices.Sorted(maps.Keys(want.own)) {
		if fileSpecific(name) {
			continue
		}
		w, g := want.own[name], got.own[name]
		compared++
		switch _, ok := got.own[name]; {
		case !ok:
			t.Errorf("%s: listed by %s, not by %s", name, want.who, got.who)
		case g.Sensitive != w.Sensitive || !slices.Equal(g.Synonyms, w.Synonyms):
			t.Errorf("%s: %s says sensitive=%s synonyms %v, %s sensitive=%s synonyms %v", name, got.who, g.Sensitive, g.Synonyms, want.who, w.Sensitive, w.Synonyms)
		case g.Value != w.Value && !(w.Value == d0[name] && g.Value == dr[name]):
			t.Errorf("%s: %s says %q, %s %q", name, got.who, g.Value, want.who, w.Value)
		}
	}
	for name := range got.own {
		if _, ok := want.own[name]; !ok && !fileSpecific(name) {
			t.Errorf("%s: listed by %s, not by %s", name, got.who, want.who)
		}
	}
	if len(got.defaults) != len(want.defaults) {
		t.Errorf("cluster defaults: %s lists %v, %s %v", got.who, got.defaults, want.who, want.defaults)
	}
	for name, w := range want.defaults {
		g, value := got.defaults[name], w.Value
		if v, ok := dr[name]; ok {
			value = v
		}
		if g.Sensitive != w.Sensitive || !slices.Equal(g.Synonyms, w.Synonyms) || g.Value != value {
			t.Errorf("cluster default %s: %s says %+v, %s %+v (want value %q)", name, got.who, g, want.who, w, value)
		}
	}
	t.Logf("own configuration: %d keys described alike by %s and %s (%d and %d listed), cluster defaults %d", compared, got.who, want.who, len(got.own), len(want.own), len(got.defaults))
}
