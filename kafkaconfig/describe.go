package kafkaconfig

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Config sources, as DescribeConfigs sends them.
const (
	SourceDynamicBroker        int8 = 2
	SourceDynamicDefaultBroker int8 = 3
	SourceStaticBroker         int8 = 4
	SourceDefault              int8 = 5
)

// errInvalidRequest is INVALID_REQUEST, the code of every refusal here.
const errInvalidRequest int16 = 42

// Node is what a node's own configuration is described from.
type Node struct {
	ID int32
	// Static is the node's properties file as read, values untrimmed.
	Static map[string]string
	// PerNode and ClusterDefault are the dynamic configs of BROKER <ID>
	// and BROKER "" in the metadata image.
	PerNode, ClusterDefault map[string]string
}

// Synonym is one source of an entry's value, highest precedence first.
type Synonym struct {
	Name   string
	Value  *string
	Source int8
}

// Entry is one config of a DescribeConfigs answer.
type Entry struct {
	Name      string
	Value     *string
	Type      Type
	ReadOnly  bool
	Sensitive bool
	Source    int8
	Synonyms  []Synonym
}

// SourceOf is the source of an entry with synonyms: the first one's,
// DEFAULT_CONFIG when there are none.
func SourceOf(synonyms []Synonym) int8 {
	if len(synonyms) == 0 {
		return SourceDefault
	}
	return synonyms[0].Source
}

// Refusal is a resource-level error of DescribeConfigs.
type Refusal struct {
	Code    int16
	Message string
}

// Describe answers DescribeConfigs of BROKER resource on node n as an
// Apache node of d's line answers it: "" is the cluster default, n's own id
// every key of its configuration; any other name is refused. Entries are
// sorted by name (Apache's order is a hash map's; kafka-configs sorts).
func (d *Defs) Describe(n Node, resource string) ([]Entry, *Refusal) {
	if resource == "" {
		return d.describeClusterDefault(n), nil
	}
	id, err := strconv.ParseInt(resource, 10, 32) // Integer.parseInt: "+1" and "01" are 1
	if err != nil {
		return nil, &Refusal{errInvalidRequest, "Broker id must be an integer, but it is: " + resource}
	}
	if int32(id) != n.ID {
		return nil, &Refusal{errInvalidRequest, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", n.ID, resource)}
	}
	return d.describeOwn(n), nil
}

// View is a node's configuration as Apache's DynamicBrokerConfig holds it:
// its file, the dynamic configs it keeps from the image, and the current
// config they make together.
type View struct {
	d                               *Defs
	perNode, clusterDefault, static map[string]string
	current                         map[string]string
}

// View builds n's configuration under d's rules.
func (d *Defs) View(n Node) *View {
	v := &View{
		d:              d,
		perNode:        d.keptDynamic(n.PerNode, true),
		clusterDefault: d.keptDynamic(n.ClusterDefault, false),
		static:         staticOriginals(n.Static),
	}
	// The file, then the cluster defaults, then the node's own dynamic
	// values, each override dropping the synonyms it beats.
	v.current = maps.Clone(v.static)
	override(v.current, v.clusterDefault)
	override(v.current, v.perNode)
	return v
}

// staticOriginals is the file as KafkaConfig keeps it: node.id and broker.id
// stand for each other when only one is given.
func staticOriginals(file map[string]string) map[string]string {
	s := maps.Clone(file)
	if s == nil {
		s = map[string]string{}
	}
	nodeID, hasNode := s["node.id"]
	brokerID, hasBroker := s["broker.id"]
	switch {
	case hasNode && !hasBroker:
		s["broker.id"] = nodeID
	case hasBroker && !hasNode:
		s["node.id"] = brokerID
	}
	return s
}

func (d *Defs) describeOwn(n Node) []Entry {
	v := d.View(n)
	names := map[string]bool{}
	for name := range v.current {
		names[name] = true
	}
	for name, k := range d.keys {
		if !k.Internal {
			names[name] = true
		}
	}
	entries := make([]Entry, 0, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		e := d.entry(name)
		if !e.Sensitive {
			e.Value = v.Value(name)
		}
		e.Synonyms = v.Synonyms(name)
		e.Source = SourceOf(e.Synonyms)
		entries = append(entries, e)
	}
	return entries
}

// describeClusterDefault lists the dynamic cluster defaults, each with only
// its DYNAMIC_DEFAULT_BROKER_CONFIG synonyms.
func (d *Defs) describeClusterDefault(n Node) []Entry {
	v := d.View(n)
	entries := make([]Entry, 0, len(v.clusterDefault))
	for _, name := range slices.Sorted(maps.Keys(v.clusterDefault)) {
		e := d.entry(name)
		if !e.Sensitive {
			e.Value = strPtr(v.clusterDefault[name])
		}
		e.Synonyms = slices.DeleteFunc(v.Synonyms(name), func(s Synonym) bool { return s.Source != SourceDynamicDefaultBroker })
		e.Source = SourceOf(e.Synonyms)
		entries = append(entries, e)
	}
	return entries
}

// entry is name's type, sensitivity and read-only flag.
func (d *Defs) entry(name string) Entry {
	t := d.typeOf(name)
	// A key of unknown type may hold a secret, so it is sensitive.
	return Entry{Name: name, Type: t, Sensitive: t == TypePassword || t == TypeUnknown, ReadOnly: !d.dynamic[name]}
}

// Set reports whether the node's file or its dynamic configs set name.
func (v *View) Set(name string) bool {
	_, ok := v.current[name]
	return ok
}

// Value is name's value in the node's current config in Java's string
// form: a KafkaConfig key's parsed value (its default when unset), or the
// raw string of a key KafkaConfig does not parse. A sensitive key's value
// is for the node alone, never for an answer.
func (v *View) Value(name string) *string {
	k, defined := v.d.keys[name]
	raw, set := v.current[name]
	switch {
	case defined && !k.Internal && set:
		if s, ok := JavaValue(raw, k.Type); ok {
			return &s
		}
		return strPtr(javaTrim(raw))
	case set:
		return &raw
	case defined:
		return k.Default
	}
	return nil
}

// typeOf is KafkaConfig.configType: the key's own type, a quota key's, or
// the type of the first synonym KafkaConfig defines (a listener-prefixed
// key takes its base key's).
func (d *Defs) typeOf(name string) Type {
	if k, ok := d.keys[name]; ok {
		return k.Type
	}
	if k, ok := d.quota[name]; ok {
		return k.Type
	}
	for _, syn := range synonymNames(name, true) {
		if k, ok := d.keys[syn]; ok {
			return k.Type
		}
	}
	return TypeUnknown
}

// Synonyms lists where name's value could come from, highest precedence
// first, from the first entry named name on (ConfigHelper.configSynonyms);
// their values are null when name is sensitive.
func (v *View) Synonyms(name string) []Synonym {
	sensitive := v.d.entry(name).Sensitive
	names := synonymNames(name, true)
	defaults := map[string]string{}
	for _, syn := range names {
		if k, ok := v.d.keys[syn]; ok && k.Default != nil {
			defaults[syn] = *k.Default
		}
	}
	var out []Synonym
	for _, layer := range []struct {
		m   map[string]string
		src int8
	}{{v.perNode, SourceDynamicBroker}, {v.clusterDefault, SourceDynamicDefaultBroker}, {v.static, SourceStaticBroker}, {defaults, SourceDefault}} {
		for _, syn := range names {
			if value, ok := layer.m[syn]; ok {
				s := Synonym{Name: syn, Source: layer.src}
				if !sensitive {
					s.Value = strPtr(value)
				}
				out = append(out, s)
			}
		}
	}
	first := slices.IndexFunc(out, func(s Synonym) bool { return s.Name == name })
	if first < 0 {
		return nil
	}
	return out[first:]
}

// listenerConfig matches a listener-prefixed key; its group is the base key.
var listenerConfig = regexp.MustCompile(`^listener\.name\.[^.]*\.(.*)$`)

// listenerMechanismConfigs are the keys written as
// listener.name.<l>.<mechanism>.<key>.
var listenerMechanismConfigs = []string{"sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
	"sasl.server.callback.handler.class", "connections.max.reauth.ms"}

// synonymNames is DynamicBrokerConfig.brokerConfigSynonyms: the names that
// set the same config, by precedence. With matchListener, a
// listener-prefixed key is followed by its base key.
func synonymNames(name string, matchListener bool) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms": // the scheduler interval is its default, not the other way round
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	if m := listenerConfig.FindStringSubmatch(name); m != nil && matchListener {
		base := m[1]
		for _, mech := range listenerMechanismConfigs {
			if strings.HasSuffix(base, mech) {
				base = mech
				break
			}
		}
		return []string{name, base}
	}
	return []string{name}
}

// override sets each of over's values in props, first dropping the
// synonyms it takes precedence over (but not a listener key's base key,
// which other listeners may use).
func override(props, over map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(over)) {
		for _, syn := range synonymNames(k, false) {
			delete(props, syn)
		}
		props[k] = over[k]
	}
}

// clusterLevelListenerConfigs may be set per listener at the cluster level.
var clusterLevelListenerConfigs = map[string]bool{"max.connections": true, "max.connection.creation.rate": true, "num.network.threads": true}

// keptDynamic is what a node keeps of the dynamic configs in the image
// (DynamicBrokerConfig.fromPersistentProps): values its dynamic keys cannot
// parse, keys that are not dynamic, SSL keys without a listener prefix and,
// at the cluster level, per-broker keys are all dropped. Keys KafkaConfig
// does not know stay.
func (d *Defs) keptDynamic(props map[string]string, perBroker bool) map[string]string {
	kept := map[string]string{}
	for k, v := range props {
		base := k
		if m := listenerConfig.FindStringSubmatch(k); m != nil {
			base = m[1]
		}
		if t, ok := d.dynamicType(base); ok {
			if _, valid := JavaValue(v, t); !valid {
				continue
			}
		}
		if _, defined := d.keys[k]; defined && !d.dynamic[k] {
			continue
		}
		if d.securityDynamic[k] {
			continue
		}
		if !perBroker && (d.perBroker[k] || base != k && !clusterLevelListenerConfigs[base]) {
			continue
		}
		kept[k] = v
	}
	return kept
}

// dynamicType is the type of a key DynamicConfig.Broker defines: a dynamic
// KafkaConfig key or a quota key.
func (d *Defs) dynamicType(name string) (Type, bool) {
	if k, ok := d.quota[name]; ok {
		return k.Type, true
	}
	if k, ok := d.keys[name]; ok && d.dynamic[name] {
		return k.Type, true
	}
	return TypeUnknown, false
}

func strPtr(s string) *string { return &s }
