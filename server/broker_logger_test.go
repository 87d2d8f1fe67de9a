package server

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BROKER_LOGGER changes are checked as Apache's RuntimeLoggerManager
// checks them (node id, logger, level, operation), all before any is
// applied; a SET of root moves the global level, and DescribeConfigs of
// this node's id shows it.
func TestBrokerLoggerLevels(t *testing.T) {
	defer zerolog.SetGlobalLevel(zerolog.GlobalLevel())
	zerolog.SetGlobalLevel(zerolog.InfoLevel)
	s := &Server{cfg: &Config{NodeID: 3}, log: zerolog.Nop()}
	res := func(name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeBrokerLogger, name, ops
		return r
	}
	op := func(o kmsg.IncrementalAlterConfigOp, name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = o, name, kmsg.StringPtr(value)
		return c
	}
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	for _, tc := range []struct {
		res  kmsg.IncrementalAlterConfigsRequestResource
		code int16
		msg  string
	}{
		{res("x", op(set, "root", "DEBUG")), kerr.InvalidRequest.Code, "Node id must be an integer, but it is: x"},
		{res("4", op(set, "root", "DEBUG")), kerr.InvalidRequest.Code, "Unexpected node id. Expected 3, but received 4"},
		{res("3", op(set, "kafka", "DEBUG")), kerr.InvalidConfig.Code, "Logger kafka does not exist!"},
		{res("3", op(set, "root", "debug")), kerr.InvalidConfig.Code, "Cannot set the log level of root to debug as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"},
		{res("3", op(del, "root", "")), kerr.InvalidRequest.Code, "Removing the log level of the root logger is not allowed"},
		{res("3", op(kmsg.IncrementalAlterConfigOpAppend, "root", "DEBUG")), kerr.InvalidRequest.Code, "APPEND operation is not allowed for the BROKER_LOGGER resource"},
		{res("3", op(set, "root", "DEBUG"), op(set, "root", "NOPE")), kerr.InvalidConfig.Code, "Cannot set the log level of root to NOPE"},
	} {
		code, msg := s.alterLoggers(tc.res, false)
		if code != tc.code || len(deref(msg)) < len(tc.msg) || deref(msg)[:len(tc.msg)] != tc.msg {
			t.Errorf("%v: %d %q, want %d %q", tc.res.Configs, code, deref(msg), tc.code, tc.msg)
		}
	}
	if zerolog.GlobalLevel() != zerolog.InfoLevel {
		t.Fatalf("a refused change moved the level to %v", zerolog.GlobalLevel())
	}
	if code, _ := s.alterLoggers(res("3", op(set, "root", "DEBUG")), true); code != 0 || zerolog.GlobalLevel() != zerolog.InfoLevel {
		t.Fatalf("validate-only: code %d, level %v", code, zerolog.GlobalLevel())
	}
	if code, msg := s.alterLoggers(res("3", op(set, "root", "TRACE")), false); code != 0 || zerolog.GlobalLevel() != zerolog.TraceLevel {
		t.Fatalf("SET root=TRACE: %d %s, level %v", code, deref(msg), zerolog.GlobalLevel())
	}
	d := kmsg.NewDescribeConfigsRequestResource()
	d.ResourceType, d.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "3"
	if out := s.describeLoggers(d); out.ErrorCode != 0 || len(out.Configs) != 1 || deref(out.Configs[0].Value) != "TRACE" ||
		out.Configs[0].Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig {
		t.Errorf("describe: %+v", out)
	}
	d.ResourceName = "2"
	if out := s.describeLoggers(d); out.ErrorCode != kerr.InvalidRequest.Code || deref(out.ErrorMessage) != "Unexpected broker id, expected 3 but received 2" {
		t.Errorf("describe of another node: %d %s", out.ErrorCode, deref(out.ErrorMessage))
	}
}
