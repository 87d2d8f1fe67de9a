package compat

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkGroupConfigTools sets a group's config with kafka-configs
// --entity-type groups and a client metrics subscription with
// kafka-client-metrics, both through a broker, describes them through the
// broker, the group also through a kraftd controller (DescribeConfigs), and
// sees values out of Apache's bounds refused with Apache's messages.
func checkGroupConfigTools(t *testing.T, v string, ctl *kraftdNode, brokers []*adminBroker) {
	t.Helper()
	bs := []string{"--bootstrap-server", brokers[0].Addr()}
	group := []string{"--entity-type", "groups", "--entity-name", "tool-group"}
	configs := func(via []string, args ...string) string {
		t.Helper()
		return configsTool(t, v, append(append(append([]string{}, via...), group...), args...)...)
	}
	if out := configs(bs, "--alter", "--add-config", "consumer.session.timeout.ms=55000,share.auto.offset.reset=earliest"); !strings.Contains(out, "Completed updating config") {
		t.Errorf("kafka-configs --entity-type groups --alter printed %q", out)
	}
	// Each tool run is a JVM start: wait until every broker (the tool's
	// admin client may ask any) describes the group's config, then
	// describe once. Not with --bootstrap-controller: the admin client
	// first lists groups, which it refuses to ask controllers, Apache's as
	// much as kraftd.
	waitEveryBroker(t, adminAddrs(brokers), "the group's config described by the brokers", func(addr string) error {
		got, err := describedConfigs(addr, kmsg.ConfigResourceTypeGroupConfig, "tool-group")
		if err != nil {
			return err
		}
		if got["consumer.session.timeout.ms"] != "55000" || got["share.auto.offset.reset"] != "earliest" {
			return fmt.Errorf("consumer.session.timeout.ms=%q share.auto.offset.reset=%q", got["consumer.session.timeout.ms"], got["share.auto.offset.reset"])
		}
		return nil
	})
	if out := configs(bs, "--describe"); !strings.Contains(out, "consumer.session.timeout.ms=55000") || !strings.Contains(out, "share.auto.offset.reset=earliest") {
		t.Errorf("kafka-configs --entity-type groups --describe printed %q", out)
	}
	// A kraftd controller describes the group as the broker does.
	Eventually(t, ReadyTimeout, "the group's config described by a kraftd controller", nil, func() error {
		got := strings.Join(describeGroupConfigsNamed(t, ctl.Addr(), "tool-group", "tool-metrics"), "\n")
		if !strings.Contains(got, `consumer.session.timeout.ms="55000" GROUP_CONFIG`) {
			return fmt.Errorf("described: %s", got)
		}
		return nil
	})
	_, stderr, err := RunTool(t, v, ConfigCommandClass(v), append(append(append([]string{}, bs...), group...), "--alter", "--add-config", "consumer.heartbeat.interval.ms=1000")...)
	if err == nil || !strings.Contains(stderr, "consumer.heartbeat.interval.ms must be") {
		t.Errorf("a heartbeat interval below Apache's bound: err %v, stderr %q", err, stderr)
	}

	metrics := func(args ...string) string {
		t.Helper()
		out, err := toolOutput(t, v, "org.apache.kafka.tools.ClientMetricsCommand", append(append([]string{}, bs...), args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := metrics("--alter", "--name", "tool-metrics", "--metrics", "org.apache.kafka.producer.", "--interval", "2000", "--match", "client_id=kraftd-.*"); !strings.Contains(out, "Altered client metrics config for tool-metrics.") {
		t.Errorf("kafka-client-metrics --alter printed %q", out)
	}
	waitEveryBroker(t, adminAddrs(brokers), "the subscription described by the brokers", func(addr string) error {
		got, err := describedConfigs(addr, kmsg.ConfigResourceTypeClientMetrics, "tool-metrics")
		if err != nil {
			return err
		}
		if got["interval.ms"] != "2000" || got["metrics"] != "org.apache.kafka.producer." || got["match"] != "client_id=kraftd-.*" {
			return fmt.Errorf("described %v", got)
		}
		return nil
	})
	out := metrics("--describe", "--name", "tool-metrics")
	for _, want := range []string{"interval.ms=2000", "metrics=org.apache.kafka.producer.", "match=client_id=kraftd-.*"} {
		if !strings.Contains(out, want) {
			t.Errorf("kafka-client-metrics --describe: no %s in: %s", want, out)
		}
	}
	out, _, err = RunTool(t, v, "org.apache.kafka.tools.ClientMetricsCommand", append(append([]string{}, bs...), "--alter", "--name", "tool-metrics", "--interval", "10")...)
	if err == nil || !strings.Contains(out, "interval must be between 100 and 3600000") {
		t.Errorf("an interval of 10 ms: err %v, kafka-client-metrics printed %q", err, out)
	}
}

// checkLoggerTools reads and moves a kraftd controller's log level with
// kafka-configs --bootstrap-controller --entity-type broker-loggers, as an
// operator does with Apache's controllers, and puts it back.
func checkLoggerTools(t *testing.T, v string, ctl *kraftdNode) {
	t.Helper()
	logger := []string{"--bootstrap-controller", ctl.Addr(), "--entity-type", "broker-loggers", "--entity-name", fmt.Sprint(ctl.ID)}
	configs := func(args ...string) string {
		t.Helper()
		return configsTool(t, v, append(append([]string{}, logger...), args...)...)
	}
	before := configs("--describe")
	if !strings.Contains(before, "root=DEBUG") {
		t.Fatalf("kafka-configs --describe of broker-logger %d printed %q, want root=DEBUG (kraftd runs at --log-level debug here)", ctl.ID, before)
	}
	if out := configs("--alter", "--add-config", "root=WARN"); !strings.Contains(out, "Completed updating config") {
		t.Errorf("--alter --add-config root=WARN printed %q", out)
	}
	if out := configs("--describe"); !strings.Contains(out, "root=WARN") {
		t.Errorf("after root=WARN, --describe printed %q", out)
	}
	_, stderr, err := RunTool(t, v, ConfigCommandClass(v), append(append([]string{}, logger...), "--alter", "--add-config", "root=LOUD")...)
	if err == nil || !strings.Contains(stderr, "Cannot set the log level of root to LOUD as it is not a supported log level") {
		t.Errorf("root=LOUD: err %v, stderr %q", err, stderr)
	}
	configs("--alter", "--add-config", "root=DEBUG")
	if out := configs("--describe"); !strings.Contains(out, "root=DEBUG") {
		t.Errorf("after root=DEBUG, --describe printed %q", out)
	}
}
