package controller

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/kafkaconfig"
	"github.com/kraftd/kraftd/metadata"
)

// configDef is one topic config: its type (DescribeConfigs' ConfigType ids)
// and its default as Apache 4.x prints it.
type configDef struct {
	typ  kmsg.ConfigType
	def  string
	enum []string // allowed values, when restricted
	min  *float64
	max  *float64
}

const (
	typeBoolean kmsg.ConfigType = 1
	typeString  kmsg.ConfigType = 2
	typeInt     kmsg.ConfigType = 3
	typeLong    kmsg.ConfigType = 5
	typeDouble  kmsg.ConfigType = 6
	typeList    kmsg.ConfigType = 7
)

func atLeast(v float64) *float64 { return &v }

func atMost(v float64) *float64 { return &v }

// topicConfigs is the topic config schema of Apache Kafka 4.1 (LogConfig).
var topicConfigs = map[string]configDef{
	"cleanup.policy":                          {typ: typeList, def: "delete", enum: []string{"delete", "compact"}},
	"compression.type":                        {typ: typeString, def: "producer", enum: []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}},
	"compression.gzip.level":                  {typ: typeInt, def: "-1"},
	"compression.lz4.level":                   {typ: typeInt, def: "9"},
	"compression.zstd.level":                  {typ: typeInt, def: "3"},
	"delete.retention.ms":                     {typ: typeLong, def: "86400000", min: atLeast(0)},
	"file.delete.delay.ms":                    {typ: typeLong, def: "60000", min: atLeast(0)},
	"flush.messages":                          {typ: typeLong, def: "9223372036854775807", min: atLeast(1)},
	"flush.ms":                                {typ: typeLong, def: "9223372036854775807", min: atLeast(0)},
	"follower.replication.throttled.replicas": {typ: typeList, def: ""},
	"index.interval.bytes":                    {typ: typeInt, def: "4096", min: atLeast(0)},
	"leader.replication.throttled.replicas":   {typ: typeList, def: ""},
	"local.retention.bytes":                   {typ: typeLong, def: "-2", min: atLeast(-2)},
	"local.retention.ms":                      {typ: typeLong, def: "-2", min: atLeast(-2)},
	"max.compaction.lag.ms":                   {typ: typeLong, def: "9223372036854775807", min: atLeast(1)},
	"max.message.bytes":                       {typ: typeInt, def: "1048588", min: atLeast(0)},
	"message.timestamp.after.max.ms":          {typ: typeLong, def: "3600000", min: atLeast(0)},
	"message.timestamp.before.max.ms":         {typ: typeLong, def: "9223372036854775807", min: atLeast(0)},
	"message.timestamp.type":                  {typ: typeString, def: "CreateTime", enum: []string{"CreateTime", "LogAppendTime"}},
	"min.cleanable.dirty.ratio":               {typ: typeDouble, def: "0.5", min: atLeast(0), max: atMost(1)},
	"min.compaction.lag.ms":                   {typ: typeLong, def: "0", min: atLeast(0)},
	"min.insync.replicas":                     {typ: typeInt, def: "1", min: atLeast(1)},
	"preallocate":                             {typ: typeBoolean, def: "false"},
	"remote.log.copy.disable":                 {typ: typeBoolean, def: "false"},
	"remote.log.delete.on.disable":            {typ: typeBoolean, def: "false"},
	"remote.storage.enable":                   {typ: typeBoolean, def: "false"},
	"retention.bytes":                         {typ: typeLong, def: "-1"},
	"retention.ms":                            {typ: typeLong, def: "604800000", min: atLeast(-1)},
	"segment.bytes":                           {typ: typeInt, def: "1073741824", min: atLeast(1024 * 1024)},
	"segment.index.bytes":                     {typ: typeInt, def: "10485760", min: atLeast(4)},
	"segment.jitter.ms":                       {typ: typeLong, def: "0", min: atLeast(0)},
	"segment.ms":                              {typ: typeLong, def: "604800000", min: atLeast(1)},
	"unclean.leader.election.enable":          {typ: typeBoolean, def: "false"},
}

// validateTopicConfig checks a topic config name and value.
func validateTopicConfig(name, value string) *Error {
	d, ok := topicConfigs[name]
	if !ok {
		return apiErr(kerr.InvalidConfig.Code, "Unknown topic config name: %s", name)
	}
	return validateValue(name, value, d)
}

func validateValue(name, value string, d configDef) *Error {
	bad := func(why string) *Error {
		return apiErr(kerr.InvalidConfig.Code, "Invalid value %s for configuration %s: %s", value, name, why)
	}
	v := strings.TrimSpace(value)
	var num float64
	switch d.typ {
	case typeBoolean:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return bad("Expected value to be either true or false")
		}
	case typeInt:
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return bad("Not a number of type INT")
		}
		num = float64(n)
	case typeLong:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return bad("Not a number of type LONG")
		}
		num = float64(n)
	case typeDouble:
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return bad("Not a number of type DOUBLE")
		}
		num = n
	case typeList:
		if d.enum != nil {
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item != "" && !slices.Contains(d.enum, item) {
					return bad("String must be one of: " + strings.Join(d.enum, ", "))
				}
			}
		}
	case typeString:
		if d.enum != nil && !slices.Contains(d.enum, v) {
			return bad("String must be one of: " + strings.Join(d.enum, ", "))
		}
	}
	// A range refusal names the parsed value, in Java's form ("+5" is 5,
	// "0.50" is 0.5), as Apache's Range validator sees it.
	if d.typ == typeInt || d.typ == typeLong || d.typ == typeDouble {
		parsed, _ := kafkaconfig.JavaValue(value, kafkaconfig.Type(d.typ))
		outside := func(why string) *Error {
			return apiErr(kerr.InvalidConfig.Code, "Invalid value %s for configuration %s: %s", parsed, name, why)
		}
		if d.min != nil && num < *d.min {
			return outside("Value must be at least " + strconv.FormatFloat(*d.min, 'f', -1, 64))
		}
		if d.max != nil && num > *d.max {
			return outside("Value must be no more than " + strconv.FormatFloat(*d.max, 'f', -1, 64))
		}
	}
	return nil
}

// effectiveTopicConfigs are a new topic's configs as CreateTopics v5+
// reports them: the ones given, then the defaults.
func effectiveTopicConfigs(im *metadata.Image, given map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, name := range sortedKeys(topicConfigs) {
		cfg := kmsg.NewCreateTopicsResponseTopicConfig()
		cfg.Name = name
		v, src := resolveTopicConfig(im, given, name)
		cfg.Value, cfg.Source = &v, src
		out = append(out, cfg)
	}
	return out
}

// resolveTopicConfig finds a topic config's value and where it comes from:
// the topic, the cluster-wide dynamic broker default, or the schema default.
func resolveTopicConfig(im *metadata.Image, topic map[string]string, name string) (string, int8) {
	if v, ok := topic[name]; ok {
		return v, sourceDynamicTopic
	}
	if v, ok := im.Configs[metadata.ConfigResource{ResourceType: resourceBroker}][brokerSynonym(name)]; ok {
		return v, sourceDynamicDefaultBroker
	}
	return topicConfigs[name].def, sourceDefault
}

// brokerSynonym is the broker config a topic config defaults to (the few
// whose names differ are mapped; the rest take a "log." prefix where Apache
// does, else keep the name).
func brokerSynonym(name string) string {
	switch name {
	case "min.insync.replicas", "unclean.leader.election.enable", "compression.type":
		return name
	case "retention.ms":
		return "log.retention.ms"
	case "retention.bytes":
		return "log.retention.bytes"
	case "segment.bytes":
		return "log.segment.bytes"
	case "cleanup.policy":
		return "log.cleanup.policy"
	}
	return "log." + name
}

// checkResource validates a config resource as Apache's controller does:
// topics must exist, brokers are "" (cluster default) or a node id. A
// change is checked by Apache's ControllerConfigurationValidator, whose
// words differ from the describe path's (ConfigHelper).
func checkResource(im *metadata.Image, typ kmsg.ConfigResourceType, name string, change bool) *Error {
	switch int8(typ) {
	case resourceTopic:
		if change && name == "" {
			return apiErr(kerr.InvalidRequest.Code, "Default topic resources are not allowed.")
		}
		if err := validateTopicName(name); err != nil {
			return err
		}
		if _, ok := im.TopicIDs[name]; !ok {
			return apiErr(kerr.UnknownTopicOrPartition.Code, "The topic '%s' does not exist.", name)
		}
	case resourceBroker:
		if name != "" {
			id, err := strconv.ParseInt(name, 10, 32)
			switch {
			case err != nil:
				return apiErr(kerr.InvalidRequest.Code, "Unable to parse broker name as a base 10 number.")
			case id < 0:
				return apiErr(kerr.InvalidRequest.Code, "Invalid negative broker ID.")
			}
		}
	case resourceGroup, resourceClientMetrics:
		// Their names are checked with their configs (alterWholeConfig).
	default:
		return apiErr(kerr.InvalidRequest.Code, "Unsupported config resource type %d", typ)
	}
	return nil
}

// Incremental config operations.
const (
	opSet      = 0
	opDelete   = 1
	opAppend   = 2
	opSubtract = 3
)

// IncrementalAlterConfigs handles IncrementalAlterConfigs for topics,
// brokers, groups and client metrics subscriptions (Apache's
// ConfigurationControlManager.incrementalAlterConfigs).
func (c *Core) IncrementalAlterConfigs(now time.Time, req *kmsg.IncrementalAlterConfigsRequest, answer func(*kmsg.IncrementalAlterConfigsResponse, error)) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		resp.Resources = nil
		var recs []metadata.Record
		rules := c.ctl.groupRules(im)
		for _, r := range req.Resources {
			out := kmsg.NewIncrementalAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
			more, err := incrementalChanges(im, r, rules)
			if err != nil {
				out.ErrorCode, out.ErrorMessage = err.Code, &err.Message
			} else {
				recs = append(recs, more...)
			}
			resp.Resources = append(resp.Resources, out)
		}
		if req.ValidateOnly {
			return nil, nil
		}
		return recs, nil
	}, func(_ written, err error) { answer(resp, err) })
}

func incrementalChanges(im *metadata.Image, r kmsg.IncrementalAlterConfigsRequestResource, rules groupRules) ([]metadata.Record, *Error) {
	if err := checkResource(im, r.ResourceType, r.ResourceName, true); err != nil {
		return nil, err
	}
	res := metadata.ConfigResource{ResourceType: int8(r.ResourceType), Name: r.ResourceName}
	current := im.Configs[res]
	var recs []metadata.Record
	seen := map[string]bool{}
	whole := map[string]*string{} // GROUP and CLIENT_METRICS: checked together at the end
	for _, cfg := range r.Configs {
		if seen[cfg.Name] {
			return nil, apiErr(kerr.InvalidRequest.Code, "Error due to duplicate config keys")
		}
		seen[cfg.Name] = true
		if isGroupOrClientMetrics(res.ResourceType) {
			switch cfg.Op {
			case opSet:
				if cfg.Value == nil {
					return nil, apiErr(kerr.InvalidRequest.Code, "Null value not supported for : %s", cfg.Name)
				}
				whole[cfg.Name] = cfg.Value
			case opDelete:
				whole[cfg.Name] = nil
			case opAppend, opSubtract:
				// Apache's controller knows the types of topic and broker
				// keys only, so it refuses list operations on these.
				return nil, apiErr(kerr.InvalidConfig.Code, "Can't %s to key %s because its type is not LIST.", opName(cfg.Op), cfg.Name)
			default:
				return nil, apiErr(kerr.InvalidRequest.Code, "Unknown operation type %d", cfg.Op)
			}
			continue
		}
		def, known := configDefFor(res.ResourceType, cfg.Name)
		if !known && res.ResourceType == resourceTopic {
			return nil, apiErr(kerr.InvalidConfig.Code, "Unknown topic config name: %s", cfg.Name)
		}
		var value *string
		switch cfg.Op {
		case opSet:
			if cfg.Value == nil {
				return nil, apiErr(kerr.InvalidRequest.Code, "Null value not supported for : %s", cfg.Name)
			}
			v := *cfg.Value
			value = &v
		case opDelete:
		case opAppend, opSubtract:
			if def.typ != typeList {
				return nil, apiErr(kerr.InvalidConfig.Code, "Can not apply %s to a non-list configuration %s", opName(cfg.Op), cfg.Name)
			}
			old, ok := current[cfg.Name]
			if !ok {
				old = def.def
			}
			items := splitList(old)
			for _, item := range splitList(deref(cfg.Value)) {
				has := slices.Contains(items, item)
				if cfg.Op == opAppend && !has {
					items = append(items, item)
				} else if cfg.Op == opSubtract && has {
					items = slices.DeleteFunc(items, func(s string) bool { return s == item })
				}
			}
			v := strings.Join(items, ",")
			value = &v
		default:
			return nil, apiErr(kerr.InvalidRequest.Code, "Unknown operation type %d", cfg.Op)
		}
		if value != nil && known {
			if err := validateValue(cfg.Name, *value, def); err != nil {
				return nil, err
			}
		}
		recs = append(recs, &metadata.ConfigRecord{ResourceType: res.ResourceType, ResourceName: res.Name, Name: cfg.Name, Value: value})
	}
	if isGroupOrClientMetrics(res.ResourceType) {
		return alterWholeConfig(current, res, whole, rules)
	}
	return recs, nil
}

func opName(op kmsg.IncrementalAlterConfigOp) string {
	if op == opAppend {
		return "APPEND"
	}
	return "SUBTRACT"
}

// configDefFor finds a config's definition: topic configs by name, broker
// configs by the topic config they are the default of.
func configDefFor(typ int8, name string) (configDef, bool) {
	if typ == resourceTopic {
		d, ok := topicConfigs[name]
		return d, ok
	}
	for topicName, d := range topicConfigs {
		if brokerSynonym(topicName) == name {
			return d, true
		}
	}
	return configDef{}, false
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// AlterConfigs handles the legacy AlterConfigs: the given configs replace
// every dynamic config of the resource.
func (c *Core) AlterConfigs(now time.Time, req *kmsg.AlterConfigsRequest, answer func(*kmsg.AlterConfigsResponse, error)) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		resp.Resources = nil
		var recs []metadata.Record
		rules := c.ctl.groupRules(im)
		for _, r := range req.Resources {
			out := kmsg.NewAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
			more, err := replaceConfigs(im, r, rules)
			if err != nil {
				out.ErrorCode, out.ErrorMessage = err.Code, &err.Message
			} else {
				recs = append(recs, more...)
			}
			resp.Resources = append(resp.Resources, out)
		}
		if req.ValidateOnly {
			return nil, nil
		}
		return recs, nil
	}, func(_ written, err error) { answer(resp, err) })
}

func replaceConfigs(im *metadata.Image, r kmsg.AlterConfigsRequestResource, rules groupRules) ([]metadata.Record, *Error) {
	if err := checkResource(im, r.ResourceType, r.ResourceName, true); err != nil {
		return nil, err
	}
	res := metadata.ConfigResource{ResourceType: int8(r.ResourceType), Name: r.ResourceName}
	next := map[string]string{}
	for _, cfg := range r.Configs {
		if _, dup := next[cfg.Name]; dup {
			return nil, apiErr(kerr.InvalidRequest.Code, "Error due to duplicate config keys")
		}
		if cfg.Value == nil {
			return nil, apiErr(kerr.InvalidRequest.Code, "Null value not supported for : %s", cfg.Name)
		}
		if isGroupOrClientMetrics(res.ResourceType) {
			next[cfg.Name] = *cfg.Value
			continue
		}
		def, known := configDefFor(res.ResourceType, cfg.Name)
		if !known && res.ResourceType == resourceTopic {
			return nil, apiErr(kerr.InvalidConfig.Code, "Unknown topic config name: %s", cfg.Name)
		}
		if known {
			if err := validateValue(cfg.Name, *cfg.Value, def); err != nil {
				return nil, err
			}
		}
		next[cfg.Name] = *cfg.Value
	}
	if isGroupOrClientMetrics(res.ResourceType) {
		changes := map[string]*string{}
		for name := range im.Configs[res] {
			changes[name] = nil
		}
		for name, v := range next {
			changes[name] = &v
		}
		return alterWholeConfig(im.Configs[res], res, changes, rules)
	}
	var recs []metadata.Record
	for _, name := range sortedKeys(im.Configs[res]) {
		if _, keep := next[name]; !keep {
			recs = append(recs, &metadata.ConfigRecord{ResourceType: res.ResourceType, ResourceName: res.Name, Name: name})
		}
	}
	for _, name := range sortedKeys(next) {
		v := next[name]
		recs = append(recs, &metadata.ConfigRecord{ResourceType: res.ResourceType, ResourceName: res.Name, Name: name, Value: &v})
	}
	return recs, nil
}

// DescribeConfigs answers from the committed image: a topic's dynamic
// configs and the schema defaults, every key of a group or client metrics
// subscription. It needs no leadership, like
// Apache's controller, which answers from its own image.
func (c *Controller) DescribeConfigs(req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	c.mu.RLock()
	defer c.mu.RUnlock()
	im := c.image
	rules := c.groupRules(im) // once a request, not once a group
	for _, r := range req.Resources {
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
		if err := checkResource(im, r.ResourceType, r.ResourceName, false); err != nil {
			out.ErrorCode, out.ErrorMessage = err.Code, &err.Message
			resp.Resources = append(resp.Resources, out)
			continue
		}
		res := metadata.ConfigResource{ResourceType: int8(r.ResourceType), Name: r.ResourceName}
		dynamic := im.Configs[res]
		out.ErrorMessage = kmsg.StringPtr("") // what Apache sends on success
		want := func(name string) bool { return r.ConfigNames == nil || slices.Contains(r.ConfigNames, name) }
		if isGroupOrClientMetrics(res.ResourceType) {
			configs, err := describeGroupOrClientMetrics(res, dynamic, rules)
			if err != nil {
				out.ErrorCode, out.ErrorMessage = err.Code, &err.Message
			}
			for _, d := range configs {
				if want(d.name) {
					out.Configs = append(out.Configs, describedConfig(req, d.name, d.value, d.typ, d.synonyms))
				}
			}
		} else if res.ResourceType == resourceTopic {
			for _, name := range sortedKeys(topicConfigs) {
				if !want(name) {
					continue
				}
				v, src := resolveTopicConfig(im, dynamic, name)
				own := []kafkaconfig.Synonym{{Name: name, Value: &v, Source: src}}
				out.Configs = append(out.Configs, describedConfig(req, name, &v, topicConfigs[name].typ, own))
			}
		}
		// BROKER resources are the answering node's own configuration
		// (DescribeOwnConfig), which the server asks for apart.
		resp.Resources = append(resp.Resources, out)
	}
	return resp
}

// describedConfig is one config of a DescribeConfigs answer; its source is
// its first synonym's (kafkaconfig.SourceOf), and the synonyms are sent
// when the request asks for them.
func describedConfig(req *kmsg.DescribeConfigsRequest, name string, value *string, typ kmsg.ConfigType, synonyms []kafkaconfig.Synonym) kmsg.DescribeConfigsResponseResourceConfig {
	cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
	src := kafkaconfig.SourceOf(synonyms)
	cfg.Name, cfg.Value, cfg.Source, cfg.ConfigType = name, value, kmsg.ConfigSource(src), typ
	cfg.IsDefault = src == sourceDefault
	if req.IncludeSynonyms {
		cfg.ConfigSynonyms = make([]kmsg.DescribeConfigsResponseResourceConfigConfigSynonym, 0, len(synonyms))
		for _, syn := range synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name, cs.Value, cs.Source = syn.Name, syn.Value, kmsg.ConfigSource(syn.Source)
			cfg.ConfigSynonyms = append(cfg.ConfigSynonyms, cs)
		}
	}
	return cfg
}
