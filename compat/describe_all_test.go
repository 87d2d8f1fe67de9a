package compat

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describedConfig is one line of `kafka-configs --describe --all`: the
// value, whether it is sensitive, and its synonyms' sources and names in
// order ("DYNAMIC_BROKER_CONFIG:log.retention.ms", ...).
type describedConfig struct {
	Value     string
	Sensitive string
	Synonyms  []string
}

// describeLineRe is one config line of kafka-configs --describe: "  name=value
// sensitive=bool synonyms={SOURCE:name=value, ...}".
var (
	describeLineRe = regexp.MustCompile(`^  ([^=\s]+)=(.*) sensitive=(true|false) synonyms=\{(.*)\}$`)
	synonymRe      = regexp.MustCompile(`(?:^|, )([A-Z_]+):([^=\s]+)=`)
)

// describeAllBroker runs kafka-configs --describe --all for broker id
// through bootstrap and parses what it prints.
func describeAllBroker(t *testing.T, v, bootstrap string, id int) map[string]describedConfig {
	t.Helper()
	out := configsTool(t, v, "--bootstrap-server", bootstrap, "--describe", "--all", "--entity-type", "brokers", "--entity-name", fmt.Sprint(id))
	got := parseDescribe(out)
	if len(got) < 100 {
		t.Fatalf("kafka-configs --describe --all for broker %d listed %d configs:\n%s", id, len(got), out)
	}
	return got
}

// parseDescribe reads the config lines of kafka-configs --describe.
func parseDescribe(out string) map[string]describedConfig {
	got := map[string]describedConfig{}
	for _, line := range strings.Split(out, "\n") {
		m := describeLineRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		c := describedConfig{Value: m[2], Sensitive: m[3]}
		for _, s := range synonymRe.FindAllStringSubmatch(m[4], -1) {
			c.Synonyms = append(c.Synonyms, s[1]+":"+s[2])
		}
		got[m[1]] = c
	}
	return got
}

// alterBrokerConfigs sets dynamic broker configs of broker name ("" the
// cluster default) with IncrementalAlterConfigs sent to the broker at
// addr, which checks them and forwards them to the active controller.
func alterBrokerConfigs(t *testing.T, addr, name string, set map[string]string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, name
	for _, k := range slices.Sorted(maps.Keys(set)) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(set[k])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	Eventually(t, ReadyTimeout, fmt.Sprintf("broker configs %v of %q set", set, name), nil, func() error {
		resp, err := Request(addr, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		if r.ErrorCode != 0 {
			return fmt.Errorf("error %d: %s", r.ErrorCode, deref(r.ErrorMessage))
		}
		return nil
	})
}

// brokerConfigsSet are the dynamic configs compareDescribeAll writes,
// round by round: a per-broker value over the cluster default over the
// default (log.cleaner.threads, which a broker lets grow at most twofold
// at a time), a per-broker one with synonyms (log.retention.ms over
// log.retention.hours), and a cluster default.
func brokerConfigsSet(round int) (perBroker, clusterDefault map[string]string) {
	return map[string]string{
			"log.cleaner.threads": fmt.Sprint(1 + round),
			"log.retention.ms":    fmt.Sprint(3600000 * (1 + round)),
		}, map[string]string{
			"log.cleaner.threads": fmt.Sprint(2 - round),
			"message.max.bytes":   fmt.Sprint(2000000 + round),
		}
}

// setAndDescribeBroker writes round's dynamic configs of broker id
// (through that broker) and returns kafka-configs --describe --all of it
// once the broker shows the last of them. Each tool run is a JVM start, so
// the wait asks the broker with DescribeConfigs and the tool runs once.
func setAndDescribeBroker(t *testing.T, v string, b *ApacheBroker, round int) map[string]describedConfig {
	t.Helper()
	perBroker, clusterDefault := brokerConfigsSet(round)
	alterBrokerConfigs(t, b.Addr(), "", clusterDefault)
	alterBrokerConfigs(t, b.Addr(), fmt.Sprint(b.NodeID), perBroker)
	shows := func(value func(name string) string) error {
		for k, want := range perBroker {
			if got := value(k); got != want {
				return fmt.Errorf("%s=%q, want %q", k, got, want)
			}
		}
		if got := value("message.max.bytes"); got != clusterDefault["message.max.bytes"] {
			return fmt.Errorf("message.max.bytes=%q, want %q", got, clusterDefault["message.max.bytes"])
		}
		return nil
	}
	Eventually(t, ReadyTimeout, fmt.Sprintf("broker %d describes round %d's configs", b.NodeID, round), nil, func() error {
		values, err := brokerConfigValues(b.Addr(), b.NodeID)
		if err != nil {
			return err
		}
		return shows(func(name string) string { return values[name] })
	})
	got := describeAllBroker(t, v, b.Addr(), b.NodeID)
	if err := shows(func(name string) string { return got[name].Value }); err != nil {
		t.Fatalf("kafka-configs --describe --all of broker %d, after its DescribeConfigs showed round %d's configs: %v", b.NodeID, round, err)
	}
	return got
}

// brokerConfigValues asks the broker at addr with DescribeConfigs for the
// values of broker id's configs.
func brokerConfigValues(addr string, id int) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, fmt.Sprint(id)
	req.Resources = append(req.Resources, res)
	resp, err := Request(addr, req)
	if err != nil {
		return nil, err
	}
	rs := resp.(*kmsg.DescribeConfigsResponse).Resources
	if len(rs) != 1 || rs[0].ErrorCode != 0 {
		return nil, fmt.Errorf("DescribeConfigs of broker %d: %+v", id, rs)
	}
	values := map[string]string{}
	for _, c := range rs[0].Configs {
		values[c.Name] = deref(c.Value)
	}
	return values, nil
}

// compareDescribeAll checks that what a broker describes of itself after
// round's configs went through one quorum (got) has the same configs,
// sensitivity and synonym sources as after round 0's went through another
// (want), and the same values but for the configs the rounds set.
func compareDescribeAll(t *testing.T, want, got map[string]describedConfig, round int) {
	t.Helper()
	changed := map[string]bool{}
	p0, d0 := brokerConfigsSet(0)
	for k := range maps.Keys(p0) {
		changed[k] = true
	}
	for k := range maps.Keys(d0) {
		changed[k] = true
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: described before, not after", name)
		case w.Sensitive != want[name].Sensitive || !slices.Equal(w.Synonyms, want[name].Synonyms):
			t.Errorf("%s: sensitive=%s synonyms %v, want sensitive=%s synonyms %v", name, w.Sensitive, w.Synonyms, want[name].Sensitive, want[name].Synonyms)
		case !changed[name] && w.Value != want[name].Value:
			t.Errorf("%s=%q, want %q", name, w.Value, want[name].Value)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: described after round %d, not before", name, round)
		}
	}
	for _, name := range []string{"log.cleaner.threads", "log.retention.ms", "message.max.bytes"} {
		t.Logf("%s=%s synonyms %v", name, got[name].Value, got[name].Synonyms)
	}
}
