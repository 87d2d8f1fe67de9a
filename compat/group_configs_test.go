package compat

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupConfigChange is one IncrementalAlterConfigs of a GROUP or
// CLIENT_METRICS resource: the resource (named per round, "" left empty)
// and its operations as "SET key=value", "DELETE key", "APPEND key=value".
type groupConfigChange struct {
	typ  kmsg.ConfigResourceType
	name string
	ops  []string
}

// groupConfigChanges are sent in this order, each alone, so that later ones
// are checked against what earlier ones left: accepted changes, and each
// kind of refusal a controller of 4.1 or 4.4 makes (messages differ
// between those lines; the test compares Apache's and kraftd's of one).
var groupConfigChanges = []groupConfigChange{
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET consumer.session.timeout.ms=50000", "SET consumer.heartbeat.interval.ms=6000"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET consumer.session.timeout.ms=40000"}},
	// Within the controllers' own maximum (rollingControllerProps: 70000), then above it.
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET consumer.session.timeout.ms=65000"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET consumer.session.timeout.ms=75000"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET consumer.heartbeat.interval.ms=20000"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET share.record.lock.duration.ms=500"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET share.record.lock.duration.ms=5000"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET share.record.lock.duration.ms=soon"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET share.isolation.level=dirty"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET share.auto.offset.reset=none"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET share.auto.offset.reset=by_duration:PT1H"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET streams.num.standby.replicas=3"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"SET no.such.key=1"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"APPEND consumer.session.timeout.ms=1"}},
	{kmsg.ConfigResourceTypeGroupConfig, "", []string{"SET consumer.session.timeout.ms=50000"}},
	{kmsg.ConfigResourceTypeGroupConfig, "g", []string{"DELETE consumer.heartbeat.interval.ms"}},
	{kmsg.ConfigResourceTypeClientMetrics, "m", []string{"SET metrics=org.apache.kafka.producer.", "SET interval.ms=1000", "SET match=client_id=kraftd-.*"}},
	{kmsg.ConfigResourceTypeClientMetrics, "m", []string{"SET interval.ms=50"}},
	{kmsg.ConfigResourceTypeClientMetrics, "m", []string{"SET interval.ms=soon"}},
	{kmsg.ConfigResourceTypeClientMetrics, "m", []string{"SET match=client_id="}},
	{kmsg.ConfigResourceTypeClientMetrics, "m", []string{"SET match=host=a"}},
	{kmsg.ConfigResourceTypeClientMetrics, "m", []string{"SET push=1"}},
	{kmsg.ConfigResourceTypeClientMetrics, "m", []string{"APPEND metrics=org.apache.kafka.consumer."}},
	{kmsg.ConfigResourceTypeClientMetrics, "", []string{"SET interval.ms=1000"}},
	// A change to the default topic is refused (Apache's validator's words).
	{kmsg.ConfigResourceTypeTopic, "", []string{"SET segment.bytes=2000000"}},
	// Range refusals of a topic's configs name the parsed value.
	{kmsg.ConfigResourceTypeTopic, trafficTopic, []string{"SET segment.bytes=+100"}},
	{kmsg.ConfigResourceTypeTopic, trafficTopic, []string{"SET min.cleanable.dirty.ratio=1.50"}},
	{kmsg.ConfigResourceTypeTopic, trafficTopic, []string{"SET min.cleanable.dirty.ratio= -0.50"}},
}

// roundName gives a resource its name in one round ("" and the traffic
// topic stay themselves).
func roundName(name string, round int) string {
	if name == "" || name == trafficTopic {
		return name
	}
	return fmt.Sprintf("%s-r%d", name, round)
}

// alterGroupConfigs sends groupConfigChanges with round's names to addr
// and returns each answer as "<change>: <code> <message>".
func alterGroupConfigs(t *testing.T, addr string, round int) []string {
	t.Helper()
	var out []string
	for _, c := range groupConfigChanges {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(1)
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = c.typ, roundName(c.name, round)
		for _, op := range c.ops {
			verb, kv, _ := strings.Cut(op, " ")
			k, v, hasValue := strings.Cut(kv, "=")
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name = k
			if hasValue {
				cfg.Value = kmsg.StringPtr(v)
			}
			switch verb {
			case "SET":
				cfg.Op = kmsg.IncrementalAlterConfigOpSet
			case "DELETE":
				cfg.Op = kmsg.IncrementalAlterConfigOpDelete
			case "APPEND":
				cfg.Op = kmsg.IncrementalAlterConfigOpAppend
			}
			res.Configs = append(res.Configs, cfg)
		}
		req.Resources = append(req.Resources, res)
		resp, err := Request(addr, req)
		if err != nil {
			t.Fatalf("IncrementalAlterConfigs %v to %s: %v", c, addr, err)
		}
		r := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		out = append(out, fmt.Sprintf("%v %q %v: %d %s", c.typ, c.name, c.ops, r.ErrorCode, deref(r.ErrorMessage)))
	}
	return out
}

// describeGroupConfigs describes round's group and subscription, and the
// group named "", at addr as "<resource> <key>=<value> <source> <type>"
// lines under a line with each resource's error.
func describeGroupConfigs(t *testing.T, addr string, round int) []string {
	t.Helper()
	return describeGroupConfigsNamed(t, addr, roundName("g", round), roundName("m", round))
}

// describeGroupConfigsNamed is describeGroupConfigs of the group and
// subscription named.
func describeGroupConfigsNamed(t *testing.T, addr, group, subscription string) []string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	req.IncludeSynonyms = true
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeGroupConfig, group}, {kmsg.ConfigResourceTypeClientMetrics, subscription}, {kmsg.ConfigResourceTypeGroupConfig, ""}} {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = r.typ, r.name
		req.Resources = append(req.Resources, res)
	}
	resp, err := Request(addr, req)
	if err != nil {
		t.Fatalf("DescribeConfigs to %s: %v", addr, err)
	}
	var out []string
	for _, res := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		out = append(out, fmt.Sprintf("%v %d %s:", res.ResourceType, res.ErrorCode, deref(res.ErrorMessage)))
		var lines []string // sorted: Apache's order is a hash map's
		for _, c := range res.Configs {
			value := "null"
			if c.Value != nil {
				value = fmt.Sprintf("%q", *c.Value)
			}
			var synonyms []string
			for _, syn := range c.ConfigSynonyms {
				synonyms = append(synonyms, fmt.Sprintf("%v:%s=%s", syn.Source, syn.Name, deref(syn.Value)))
			}
			lines = append(lines, fmt.Sprintf("%v %s=%s %v %v read-only=%v synonyms=%v", res.ResourceType, c.Name, value, c.Source, c.ConfigType, c.ReadOnly, synonyms))
		}
		slices.Sort(lines)
		out = append(out, lines...)
	}
	return out
}

// checkGroupConfigsAlike compares what a round of group and client metrics
// config changes got (answers, then descriptions through a broker and a
// controller) with what round 0 got from Apache's quorum.
func checkGroupConfigsAlike(t *testing.T, want, got []string, what string) {
	t.Helper()
	if strings.Join(want, "\n") == strings.Join(got, "\n") {
		t.Logf("%s: the same %d lines as Apache's quorum", what, len(got))
		return
	}
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("%s, line %d:\n  Apache: %s\n  kraftd: %s", what, i, w, g)
		}
	}
}

// groupConfigRound makes round's changes through broker and describes the
// result through the broker and through controller, once each shows the
// last accepted session timeout and subscription interval (a broker or a
// follower controller learns them by fetching).
func groupConfigRound(t *testing.T, broker, controller string, round int) (answers, viaBroker, viaController []string) {
	t.Helper()
	answers = alterGroupConfigs(t, broker, round)
	describeOnce := func(addr string) []string {
		var got []string
		Eventually(t, ReadyTimeout, addr+" describes the group's settings", nil, func() error {
			got = describeGroupConfigs(t, addr, round)
			all := strings.Join(got, "\n")
			if !strings.Contains(all, `consumer.session.timeout.ms="65000"`) || !strings.Contains(all, `interval.ms="1000"`) {
				return fmt.Errorf("described %v", got)
			}
			return nil
		})
		return got
	}
	return answers, describeOnce(broker), describeOnce(controller)
}
