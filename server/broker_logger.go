package server

// BROKER_LOGGER: the node's own log level as Apache's controller serves its
// log4j loggers (RuntimeLoggerManager): DescribeConfigs lists them,
// IncrementalAlterConfigs SET changes one, both only for this node's id
// and never through the metadata log. kraftd has one logger, "root", whose
// level is zerolog's global level (cmd/kraftd builds its logger at TRACE
// and sets the global level from --log-level), so a change reaches every
// component at once.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const rootLogger = "root"

// log4jLevels maps Apache's level names (LogLevelConfig.VALID_LOG_LEVELS)
// to zerolog's.
var log4jLevels = map[string]zerolog.Level{
	"TRACE": zerolog.TraceLevel, "DEBUG": zerolog.DebugLevel, "INFO": zerolog.InfoLevel,
	"WARN": zerolog.WarnLevel, "ERROR": zerolog.ErrorLevel, "FATAL": zerolog.FatalLevel,
}

const validLogLevels = "DEBUG, ERROR, FATAL, INFO, TRACE, WARN"

// log4jName is a zerolog level's name in Apache's words.
func log4jName(l zerolog.Level) string {
	for name, level := range log4jLevels {
		if level == l {
			return name
		}
	}
	if l > zerolog.FatalLevel {
		return "OFF"
	}
	return "TRACE"
}

// checkLoggerNode checks a BROKER_LOGGER resource names this node.
func (s *Server) checkLoggerNode(name string, describe bool) (int16, string) {
	if describe {
		if name == "" {
			return kerr.InvalidRequest.Code, "Broker id must not be empty"
		}
		if id, err := strconv.ParseInt(name, 10, 32); err != nil || int32(id) != s.cfg.NodeID {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d but received %s", s.cfg.NodeID, name)
		}
		return 0, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest.Code, "Node id must be an integer, but it is: " + name
	}
	if int32(id) != s.cfg.NodeID {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected node id. Expected %d, but received %d", s.cfg.NodeID, id)
	}
	return 0, ""
}

// describeLoggers answers DescribeConfigs of a BROKER_LOGGER resource.
func (s *Server) describeLoggers(res kmsg.DescribeConfigsRequestResource) kmsg.DescribeConfigsResponseResource {
	out := kmsg.NewDescribeConfigsResponseResource()
	out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
	if code, msg := s.checkLoggerNode(res.ResourceName, true); code != 0 {
		out.ErrorCode, out.ErrorMessage = code, &msg
		return out
	}
	out.ErrorMessage = kmsg.StringPtr("")
	if res.ConfigNames == nil || slices.Contains(res.ConfigNames, rootLogger) {
		cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
		cfg.Name, cfg.Value = rootLogger, kmsg.StringPtr(log4jName(zerolog.GlobalLevel()))
		cfg.Source = kmsg.ConfigSourceDynamicBrokerLoggerConfig
		cfg.ConfigType = kmsg.ConfigTypeString
		out.Configs = append(out.Configs, cfg)
	}
	return out
}

// alterLoggers applies IncrementalAlterConfigs of a BROKER_LOGGER resource:
// every operation is checked before any is applied, as Apache's are.
func (s *Server) alterLoggers(res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, *string) {
	refuse := func(code int16, format string, args ...any) (int16, *string) {
		msg := fmt.Sprintf(format, args...)
		return code, &msg
	}
	if code, msg := s.checkLoggerNode(res.ResourceName, false); code != 0 {
		return code, &msg
	}
	for _, op := range res.Configs {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete:
		case kmsg.IncrementalAlterConfigOpAppend:
			return refuse(kerr.InvalidRequest.Code, "APPEND operation is not allowed for the BROKER_LOGGER resource")
		case kmsg.IncrementalAlterConfigOpSubtract:
			return refuse(kerr.InvalidRequest.Code, "SUBTRACT operation is not allowed for the BROKER_LOGGER resource")
		default:
			return refuse(kerr.InvalidRequest.Code, "Unknown operation type %d is not allowed for the BROKER_LOGGER resource", int8(op.Op))
		}
		if op.Name != rootLogger {
			return refuse(kerr.InvalidConfig.Code, "Logger %s does not exist!", op.Name)
		}
		if op.Op == kmsg.IncrementalAlterConfigOpDelete {
			return refuse(kerr.InvalidRequest.Code, "Removing the log level of the root logger is not allowed")
		}
		if _, ok := log4jLevels[deref(op.Value)]; !ok {
			return refuse(kerr.InvalidConfig.Code, "Cannot set the log level of %s to %s as it is not a supported log level. Valid log levels are %s",
				op.Name, deref(op.Value), validLogLevels)
		}
	}
	if validateOnly {
		return 0, nil
	}
	for _, op := range res.Configs {
		zerolog.SetGlobalLevel(log4jLevels[*op.Value])
		s.log.Warn().Str("logger", op.Name).Str("new_level", *op.Value).Msg("updated the log level")
	}
	return 0, nil
}
