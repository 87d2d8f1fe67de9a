package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

type configOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

func set(name, value string) configOp { return configOp{name, opSet, &value} }
func del(name string) configOp        { return configOp{name: name, op: opDelete} }

func alterConfigs(t *testing.T, c *Controller, typ kmsg.ConfigResourceType, name string, ops ...configOp) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	for _, o := range ops {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = o.name, o.op, o.value
		res.Configs = append(res.Configs, cfg)
	}
	req.Resources = append(req.Resources, res)
	resp, err := c.IncrementalAlterConfigs(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Resources[0]
	return r.ErrorCode, deref(r.ErrorMessage)
}

const (
	groupType         = kmsg.ConfigResourceTypeGroupConfig
	clientMetricsType = kmsg.ConfigResourceTypeClientMetrics
)

// Each check of Apache's controller on GROUP and CLIENT_METRICS configs,
// with the code and message of the release line of the cluster's oldest
// node: its broker supports metadata.version up to 4.1-IV1 (27), 4.2-IV1
// (29) or 4.4-IV2 (33).
func TestGroupAndClientMetricsConfigRefusals(t *testing.T) {
	invalidConfig, invalidRequest := kerr.InvalidConfig.Code, kerr.InvalidRequest.Code
	cases := []struct {
		mv   int16
		typ  kmsg.ConfigResourceType
		name string
		ops  []configOp
		code int16
		msg  string
	}{
		{27, groupType, "g", []configOp{set("consumer.session.timeout.ms", "50000")}, 0, ""},
		{27, groupType, "", []configOp{set("consumer.session.timeout.ms", "50000")}, invalidRequest, "Default group resources are not allowed."},
		{27, groupType, "g", []configOp{set("no.such.key", "1")}, invalidConfig, "Unknown group config name: no.such.key"},
		{27, groupType, "g", []configOp{set("share.delivery.count.limit", "3")}, invalidConfig, "Unknown group config name: share.delivery.count.limit"},
		{33, groupType, "g", []configOp{set("share.delivery.count.limit", "3")}, 0, ""},
		{27, groupType, "g", []configOp{set("consumer.session.timeout.ms", "40000")}, invalidConfig,
			"consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{33, groupType, "g", []configOp{set("consumer.session.timeout.ms", "40000")}, invalidConfig,
			"consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{27, groupType, "g", []configOp{set("streams.num.standby.replicas", "3")}, invalidConfig,
			"streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"},
		{33, groupType, "g", []configOp{set("streams.num.standby.replicas", "3")}, invalidConfig,
			"streams.num.standby.replicas must be less than or equal to 2"},
		{27, groupType, "g", []configOp{set("share.record.lock.duration.ms", "abc")}, invalidConfig,
			"Invalid value abc for configuration share.record.lock.duration.ms: Not a number of type INT"},
		{27, groupType, "g", []configOp{set("share.record.lock.duration.ms", "500")}, invalidConfig,
			"Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{27, groupType, "g", []configOp{set("share.isolation.level", "dirty")}, invalidConfig,
			"Invalid value dirty for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{27, groupType, "g", []configOp{set("share.auto.offset.reset", "none")}, invalidConfig,
			"Invalid value none for configuration share.auto.offset.reset: Invalid value `none` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{27, groupType, "g", []configOp{set("share.auto.offset.reset", "by_duration:PT1H30M")}, 0, ""},
		{27, groupType, "g", []configOp{set("share.auto.offset.reset", "by_duration:-PT1H")}, invalidConfig, "Invalid value by_duration:-PT1H"},
		{27, groupType, "g", []configOp{{"consumer.session.timeout.ms", opAppend, strp("1")}}, invalidConfig,
			"Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."},
		{33, groupType, "g", []configOp{set("streams.rack.aware.assignment.tags", "a,b,a")}, invalidConfig,
			"streams.rack.aware.assignment.tags must not contain duplicate tag keys."},
		{33, groupType, "g", []configOp{set("streams.assignor.name", "greedy")}, invalidConfig,
			"streams.assignor.name 'greedy' is not a registered task assignor. Registered assignors are: [sticky]."},
		{33, groupType, "g", []configOp{set("errors.deadletterqueue.topic.name", "__dlq")}, invalidConfig,
			"errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"},
		{33, groupType, "g", []configOp{set("consumer.heartbeat.interval.ms", strings.Repeat("1", 40000))}, invalidConfig,
			"The configuration value cannot be added because it exceeds the maximum value size of 32767 bytes."},

		{27, clientMetricsType, "m", []configOp{set("metrics", "org.apache.kafka.producer."), set("interval.ms", "1000"), set("match", "client_id=app-.*")}, 0, ""},
		{27, clientMetricsType, "", []configOp{set("interval.ms", "1000")}, invalidRequest, "Subscription name can't be empty"},
		{27, clientMetricsType, "m", []configOp{set("push", "1")}, invalidRequest, "Unknown client metrics configuration: push"},
		{27, clientMetricsType, "m", []configOp{set("interval.ms", "50")}, invalidRequest,
			"Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{27, clientMetricsType, "m", []configOp{set("interval.ms", "soon")}, invalidConfig,
			"Invalid value soon for configuration interval.ms: Not a number of type INT"},
		{27, clientMetricsType, "m", []configOp{set("match", "client_id=")}, invalidConfig, "Illegal client matching pattern: client_id="},
		{27, clientMetricsType, "m", []configOp{set("match", "host=a")}, invalidConfig, "Illegal client matching pattern: host=a"},
		{27, clientMetricsType, "m", []configOp{set("match", "client_id=a=b")}, invalidConfig, "Illegal client matching pattern: client_id=a=b"},
		{27, clientMetricsType, "m", []configOp{set("match", "client_id=a, client_software_name=(")}, invalidConfig, "Illegal client matching pattern: client_software_name=("},
		{27, clientMetricsType, "m", []configOp{set("metrics", "a,,b")}, 0, ""},
		{29, clientMetricsType, "m", []configOp{set("metrics", "a,,b")}, invalidConfig, "Configuration 'metrics' values must not be empty."},
		{29, clientMetricsType, "m", []configOp{{"metrics", opAppend, strp("c")}}, invalidConfig, "Can't APPEND to key metrics because its type is not LIST."},
	}
	for _, tc := range cases {
		c, q := controllerAtLine(t, tc.mv)
		code, msg := alterConfigs(t, c, tc.typ, tc.name, tc.ops...)
		if code != tc.code || !strings.HasPrefix(msg, tc.msg) || (tc.code != 0 && tc.msg == "") {
			t.Errorf("MV %d %v %q %v: code %d %q, want %d %q", tc.mv, tc.typ, tc.name, tc.ops, code, msg, tc.code, tc.msg)
		}
		if wrote := configRecords(q); (tc.code == 0) != (wrote > 0) {
			t.Errorf("MV %d %v %v: answered %d and wrote %d records", tc.mv, tc.typ, tc.ops, code, wrote)
		}
	}
}

// Settings stay in the metadata: a later change is checked with them (a
// kept session timeout of 50000 does not stop a heartbeat change), an
// unchanged value writes nothing, a delete removes the key, and both
// resources are described with every key, set or default.
func TestGroupConfigsKeptAndDescribed(t *testing.T) {
	c, q := controllerAtLine(t, 27)
	if code, msg := alterConfigs(t, c, groupType, "g", set("consumer.session.timeout.ms", "50000"), set("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("set: %d %s", code, msg)
	}
	before := configRecords(q)
	if code, msg := alterConfigs(t, c, groupType, "g", set("consumer.session.timeout.ms", "50000")); code != 0 || configRecords(q) != before {
		t.Errorf("unchanged value: %d %s, %d records", code, msg, configRecords(q)-before)
	}
	if code, msg := alterConfigs(t, c, groupType, "g", set("consumer.heartbeat.interval.ms", "6000"), del("share.auto.offset.reset")); code != 0 {
		t.Fatalf("second change: %d %s", code, msg)
	}
	if code, msg := alterConfigs(t, c, clientMetricsType, "m", set("interval.ms", "1000")); code != 0 {
		t.Fatalf("client metrics: %d %s", code, msg)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{groupType, "g"}, {clientMetricsType, "m"}, {groupType, ""}} {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = r.typ, r.name
		req.Resources = append(req.Resources, res)
	}
	resp := c.DescribeConfigs(req)
	got := map[string]string{}
	for _, cfg := range resp.Resources[0].Configs {
		got[cfg.Name] = deref(cfg.Value) + "/" + cfg.Source.String()
	}
	want := map[string]string{
		"consumer.session.timeout.ms":    "50000/GROUP_CONFIG",
		"consumer.heartbeat.interval.ms": "6000/GROUP_CONFIG",
		"share.auto.offset.reset":        "latest/DEFAULT_CONFIG",
		"streams.num.standby.replicas":   "0/DEFAULT_CONFIG",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("group %s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != 10 {
		t.Errorf("group described %d keys at 4.1, want 10: %v", len(got), got)
	}
	m := resp.Resources[1].Configs
	if len(m) != 3 || m[0].Name != "interval.ms" || deref(m[0].Value) != "1000" || m[0].Source != kmsg.ConfigSourceClientMetricsConfig ||
		deref(m[1].Value) != "" || m[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("client metrics described %+v", m)
	}
	if r := resp.Resources[2]; r.ErrorCode != kerr.InvalidRequest.Code || deref(r.ErrorMessage) != "Group name must not be empty" {
		t.Errorf("empty group name: %d %s", r.ErrorCode, deref(r.ErrorMessage))
	}
}

// configRecords counts the ConfigRecords written so far.
func configRecords(q *fakeQuorum) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, r := range q.log {
		if _, ok := r.(*metadata.ConfigRecord); ok {
			n++
		}
	}
	return n
}

// controllerAtLine is a controller at metadata.version mv whose cluster has
// one broker registered, supporting metadata.version up to mv: the release
// line of mv is the cluster's.
func controllerAtLine(t *testing.T, mv int16) (*Controller, *fakeQuorum) {
	t.Helper()
	c, q, _ := newTestController(t, mv)
	q.write([]metadata.Record{&metadata.RegisterBrokerRecord{BrokerId: 7, BrokerEpoch: 1, Features: []metadata.RegisterBrokerRecordBrokerFeature{
		{Name: MetadataVersionFeature, MinSupportedVersion: MinMetadataVersion, MaxSupportedVersion: mv}}}})
	return c, q
}

// With nothing registered, or only nodes as new as kraftd, the line is
// kraftd's own; the oldest registered node's decides otherwise.
func TestClusterReleaseLine(t *testing.T) {
	if _, q := controllerAtLine(t, 27); clusterReleaseLine(q.c.image) != 41 {
		t.Errorf("a 4.1 broker: line %d", clusterReleaseLine(q.c.image))
	}
	if c, _, _ := newTestController(t, 27); clusterReleaseLine(c.image) != 44 {
		t.Errorf("no node registered: line %d", clusterReleaseLine(c.image))
	}
	for mv, want := range map[int16]int{21: 40, 25: 40, 26: 41, 29: 42, 30: 43, 31: 44, 33: 44} {
		if got := releaseLine(mv); got != want {
			t.Errorf("releaseLine(%d) = %d, want %d", mv, got, want)
		}
	}
}

// Any key and value a client sends to a group or a client metrics
// subscription, at any line, is answered (accepted, or refused with
// INVALID_CONFIG or INVALID_REQUEST), never a panic.
func FuzzGroupAndClientMetricsConfigs(f *testing.F) {
	f.Add("consumer.session.timeout.ms", "50000", 44)
	f.Add("share.auto.offset.reset", "by_duration:P1DT2H3M4.5S", 41)
	f.Add("share.auto.offset.reset", "by_duration:-PT99999999999999H", 44)
	f.Add("streams.rack.aware.assignment.tags", " a , b,,a", 44)
	f.Add("match", "client_id=(a|b)*,client_software_name==x", 42)
	f.Add("metrics", ",", 43)
	f.Add("interval.ms", "+2147483648", 40)
	f.Fuzz(func(t *testing.T, key, value string, line int) {
		line = 40 + (line%5+5)%5
		for _, err := range []*Error{
			validateGroupConfigs("g", map[string]string{key: value}, groupRules{line: line}),
			validateClientMetricsConfigs("m", map[string]string{key: value}, line),
		} {
			if err != nil && err.Code != kerr.InvalidConfig.Code && err.Code != kerr.InvalidRequest.Code {
				t.Fatalf("%s=%q at %d: code %d %s", key, value, line, err.Code, err.Message)
			}
		}
	})
}

// A group's unset keys take the node's own group.* values, its bounds
// are the node's, and from 4.3 its synonyms are the broker keys' chains,
// as Apache's controller reads them from its KafkaConfig.
func TestGroupConfigsFollowTheNodesGroupKeys(t *testing.T) {
	static := map[string]string{"group.consumer.session.timeout.ms": "50000", "group.consumer.max.session.timeout.ms": "70000"}
	describe := func(c *Controller, group string) map[string]string {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms = true
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = groupType, group
		req.Resources = append(req.Resources, res)
		got := map[string]string{}
		for _, cfg := range c.DescribeConfigs(req).Resources[0].Configs {
			var syns []string
			for _, s := range cfg.ConfigSynonyms {
				syns = append(syns, s.Source.String()+":"+s.Name+"="+deref(s.Value))
			}
			got[cfg.Name] = deref(cfg.Value) + " " + cfg.Source.String() + " " + strings.Join(syns, ",")
		}
		return got
	}

	c, _ := controllerAtLine(t, LatestMetadataVersion)
	c.UseStaticConfig(static)
	if code, msg := alterConfigs(t, c, groupType, "g", set("consumer.session.timeout.ms", "65000")); code != 0 {
		t.Fatalf("65000 within the node's maximum of 70000: %d %s", code, msg)
	}
	if code, msg := alterConfigs(t, c, groupType, "g", set("consumer.session.timeout.ms", "75000")); code != kerr.InvalidConfig.Code ||
		msg != "consumer.session.timeout.ms must be in the range 45000 to 70000 inclusive." {
		t.Errorf("75000: %d %q", code, msg)
	}
	got := describe(c, "g")
	for k, want := range map[string]string{
		"consumer.session.timeout.ms": "65000 GROUP_CONFIG GROUP_CONFIG:consumer.session.timeout.ms=65000," +
			"STATIC_BROKER_CONFIG:group.consumer.session.timeout.ms=50000,DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000",
		"consumer.heartbeat.interval.ms": "5000 DEFAULT_CONFIG DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000",
		"share.auto.offset.reset":        "latest DEFAULT_CONFIG DEFAULT_CONFIG:share.auto.offset.reset=latest",
		"streams.assignor.name":          "sticky DEFAULT_CONFIG DEFAULT_CONFIG:group.streams.assignors=sticky",
	} {
		if got[k] != want {
			t.Errorf("4.4 %s:\n got  %s\n want %s", k, got[k], want)
		}
	}

	c, _ = controllerAtLine(t, 27) // 4.1
	c.UseStaticConfig(static)
	if got := describe(c, "h")["consumer.session.timeout.ms"]; got != "50000 DEFAULT_CONFIG DEFAULT_CONFIG:consumer.session.timeout.ms=50000" {
		t.Errorf("4.1 unset consumer.session.timeout.ms: %s", got)
	}
	if code, msg := alterConfigs(t, c, groupType, "h", set("consumer.session.timeout.ms", "75000")); code != kerr.InvalidConfig.Code ||
		msg != "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms" {
		t.Errorf("4.1 75000: %d %q", code, msg)
	}
}

// A range refusal of a topic config names the value as Apache's Range
// validator sees it, parsed ("+100" is 100, "1.50" is 1.5), and
// min.cleanable.dirty.ratio has Apache's upper bound too.
func TestTopicRangeRefusalsNameTheParsedValue(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{"segment.bytes", "+100", "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576"},
		{"min.cleanable.dirty.ratio", "1.50", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"min.cleanable.dirty.ratio", " -0.50", "Invalid value -0.5 for configuration min.cleanable.dirty.ratio: Value must be at least 0"},
		{"retention.ms", "x", "Invalid value x for configuration retention.ms: Not a number of type LONG"},
	} {
		err := validateTopicConfig(c.name, c.value)
		if err == nil || err.Message != c.want {
			t.Errorf("%s=%q: %v, want %q", c.name, c.value, err, c.want)
		}
	}
	if err := validateTopicConfig("min.cleanable.dirty.ratio", "1"); err != nil {
		t.Errorf("min.cleanable.dirty.ratio=1: %v", err)
	}
}

// A change to a resource Apache's validator refuses by name gets its words:
// the default topic, a broker name that is no number, a negative one.
func TestChangeRefusedByResourceName(t *testing.T) {
	c, _ := controllerAtLine(t, 27)
	for _, tc := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		msg  string
	}{
		{kmsg.ConfigResourceTypeTopic, "", "Default topic resources are not allowed."},
		{kmsg.ConfigResourceTypeBroker, "x", "Unable to parse broker name as a base 10 number."},
		{kmsg.ConfigResourceTypeBroker, "-1", "Invalid negative broker ID."},
	} {
		if code, msg := alterConfigs(t, c, tc.typ, tc.name, set("segment.bytes", "2000000")); code != kerr.InvalidRequest.Code || msg != tc.msg {
			t.Errorf("%v %q: %d %q, want INVALID_REQUEST %q", tc.typ, tc.name, code, msg, tc.msg)
		}
	}
}
