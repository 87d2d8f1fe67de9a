package controller

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/kafkaconfig"
	"github.com/kraftd/kraftd/metadata"
)

// GROUP (32) and CLIENT_METRICS (16) config resources: their keys, and the
// checks Apache's controller makes on a resource's whole config after a
// change (ControllerConfigurationValidator with GroupConfig and
// ClientMetricsConfigs). Both changed from line to line (4.0 to 4.4: keys,
// messages, which values are checked), and an Apache controller applies its
// own release's; kraftd applies those of the oldest release in the cluster
// (clusterReleaseLine). Bounds are Apache's defaults for the controller's
// own group.* settings, which kraftd does not read.

const (
	resourceClientMetrics int8 = 16
	resourceGroup         int8 = 32
)

// Config sources of DescribeConfigs for these resources.
const (
	sourceClientMetrics int8 = 7
	sourceGroup         int8 = 8
)

// maxConfigValueChars is Apache's limit (4.1+) on a changed value's length.
const maxConfigValueChars = 32767

// releaseLine is the Apache release line of a metadata.version level, as
// major*10+minor: 40 for 4.0-IV3, 44 for 4.4-IV2. Levels before 4.0 count
// as 4.0 (kraftd applies one line's rules to them).
func releaseLine(mv int16) int { return max(40, exactReleaseLine(mv)) }

// exactReleaseLine is releaseLine without the floor: 39 for 3.9-IV0; 0 for
// a level with no release name.
func exactReleaseLine(mv int16) int {
	name := MetadataVersionName(mv)
	major, rest, ok1 := strings.Cut(name, ".")
	minor, _, ok2 := strings.Cut(rest, "-")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return 0
	}
	return ma*10 + mi
}

// clusterReleaseLine is the release line of the oldest Apache release among
// the registered brokers and controllers, told by the highest
// metadata.version each supports (4.1.2 nodes support 4.1-IV1, 4.4.0 nodes
// 4.4-IV2); kraftd's own line, 4.4, when none is older. The finalized
// metadata.version would not do: a 4.4 cluster often runs at an older one.
func clusterReleaseLine(im *metadata.Image) int { return releaseLine(oldestSupported(im)) }

// oldestSupported is the lowest of the highest metadata.version levels the
// registered nodes support; kraftd's own highest when none is lower.
func oldestSupported(im *metadata.Image) int16 {
	newest := LatestMetadataVersion
	lower := func(name string, maxSupported int16) {
		if name == MetadataVersionFeature && maxSupported < newest {
			newest = maxSupported
		}
	}
	for _, b := range im.Brokers {
		for _, f := range b.Features {
			lower(f.Name, f.MaxSupportedVersion)
		}
	}
	for _, c := range im.Controllers {
		for _, f := range c.Features {
			lower(f.Name, f.MaxSupportedVersion)
		}
	}
	return newest
}

// groupKey is one key of Apache's GroupConfig.
type groupKey struct {
	name     string
	typ      kmsg.ConfigType
	def      *string // as described when not set
	atLeast  *int64  // the definition's own lower bound
	since    int     // first release line that defines it
	internal bool    // defined as internal (4.4): accepted, described only when set
	check    func(name, value string, line int) *Error
	// brokerSince is the first line whose unset value is the node's broker
	// key (group.<name>, brokerName's); 0 if none ever is. From 4.3 the
	// broker key's synonym chain is the group key's too.
	brokerSince int
}

// brokerName is the broker key a group key's unset value comes from.
func (k groupKey) brokerName() string {
	if k.name == "streams.assignor.name" {
		return "group.streams.assignors"
	}
	return "group." + k.name
}

func i64(n int64) *int64 { return &n }

// groupKeys are GroupConfig's keys in definition order (the order Apache
// parses them, so the first bad one is the one named).
var groupKeys = []groupKey{
	{name: "consumer.session.timeout.ms", typ: typeInt, def: kmsg.StringPtr("45000"), atLeast: i64(1), since: 40, brokerSince: 40},
	{name: "consumer.heartbeat.interval.ms", typ: typeInt, def: kmsg.StringPtr("5000"), atLeast: i64(1), since: 40, brokerSince: 40},
	{name: "consumer.assignment.interval.ms", typ: typeInt, def: kmsg.StringPtr("1000"), atLeast: i64(0), since: 43, brokerSince: 43},
	{name: "consumer.assignor.offload.enable", typ: typeBoolean, def: kmsg.StringPtr("true"), since: 44, internal: true, brokerSince: 44},
	{name: "share.session.timeout.ms", typ: typeInt, def: kmsg.StringPtr("45000"), atLeast: i64(1), since: 40, brokerSince: 41},
	{name: "share.heartbeat.interval.ms", typ: typeInt, def: kmsg.StringPtr("5000"), atLeast: i64(1), since: 40, brokerSince: 41},
	{name: "share.record.lock.duration.ms", typ: typeInt, def: kmsg.StringPtr("30000"), atLeast: i64(1000), since: 40, brokerSince: 40},
	{name: "share.delivery.count.limit", typ: typeInt, def: kmsg.StringPtr("5"), atLeast: i64(2), since: 43, brokerSince: 43},
	{name: "share.partition.max.record.locks", typ: typeInt, def: kmsg.StringPtr("2000"), atLeast: i64(100), since: 43, brokerSince: 43},
	{name: "share.auto.offset.reset", typ: typeString, def: kmsg.StringPtr("latest"), since: 40, check: checkShareOffsetReset},
	{name: "share.isolation.level", typ: typeString, def: kmsg.StringPtr("read_uncommitted"), since: 41, check: oneOf("read_committed", "read_uncommitted")},
	{name: "share.renew.acknowledge.enable", typ: typeBoolean, def: kmsg.StringPtr("true"), since: 43},
	{name: "share.assignment.interval.ms", typ: typeInt, def: kmsg.StringPtr("1000"), atLeast: i64(0), since: 43, brokerSince: 43},
	{name: "share.assignor.offload.enable", typ: typeBoolean, def: kmsg.StringPtr("true"), since: 44, internal: true, brokerSince: 44},
	{name: "streams.session.timeout.ms", typ: typeInt, def: kmsg.StringPtr("45000"), atLeast: i64(1), since: 41, brokerSince: 43},
	{name: "streams.heartbeat.interval.ms", typ: typeInt, def: kmsg.StringPtr("5000"), atLeast: i64(1), since: 41, brokerSince: 43},
	{name: "streams.num.standby.replicas", typ: typeInt, def: kmsg.StringPtr("0"), atLeast: i64(0), since: 41, brokerSince: 43},
	{name: "streams.initial.rebalance.delay.ms", typ: typeInt, def: kmsg.StringPtr("3000"), atLeast: i64(0), since: 42, brokerSince: 43},
	{name: "streams.assignment.interval.ms", typ: typeInt, def: kmsg.StringPtr("1000"), atLeast: i64(0), since: 43, brokerSince: 43},
	{name: "streams.assignor.offload.enable", typ: typeBoolean, def: kmsg.StringPtr("true"), since: 44, internal: true, brokerSince: 44},
	{name: "streams.task.offset.interval.ms", typ: typeInt, def: kmsg.StringPtr("60000"), atLeast: i64(1), since: 44, internal: true, brokerSince: 44},
	{name: "streams.num.warmup.replicas", typ: typeInt, def: kmsg.StringPtr("2"), atLeast: i64(0), since: 44, internal: true, brokerSince: 44},
	{name: "streams.rack.aware.assignment.tags", typ: typeList, def: kmsg.StringPtr(""), since: 44, check: nonEmptyItems, brokerSince: 44},
	{name: "streams.acceptable.recovery.lag", typ: typeLong, def: kmsg.StringPtr("10000"), atLeast: i64(0), since: 44, internal: true, brokerSince: 44},
	// No default to check; described with the first registered assignor's name.
	{name: "streams.assignor.name", typ: typeString, def: kmsg.StringPtr("sticky"), since: 44, brokerSince: 44},
	{name: "errors.deadletterqueue.topic.name", typ: typeString, def: kmsg.StringPtr(""), since: 44},
	{name: "errors.deadletterqueue.copy.record.enable", typ: typeBoolean, def: kmsg.StringPtr("false"), since: 44},
}

// describeGroupKey is one group key as Apache's line describes it. Unset,
// its value is the node's broker key (group.<name>) where the line takes
// it from there, else the key's own default. Its synonyms are, from 4.3,
// the broker key's synonym chain (or the key's own default); before, the
// key itself at its value.
func describeGroupKey(k groupKey, set map[string]string, r groupRules) describedKey {
	d := describedKey{name: k.name, value: k.def, typ: k.typ}
	fromBroker := k.brokerSince != 0 && k.brokerSince <= r.line
	// 4.4 takes an internal key's default from the broker only when the
	// node sets the broker key; the assignor name is always the first
	// registered assignor's.
	if fromBroker && k.name != "streams.assignor.name" && (!k.internal || r.node != nil && r.node.Set(k.brokerName())) {
		if v := r.brokerValue(k.brokerName()); v != nil {
			d.value = v
		}
	}
	v, isSet := set[k.name]
	if isSet {
		d.value = &v
	}
	own := kafkaconfig.Synonym{Name: k.name, Value: d.value, Source: sourceDefault}
	if isSet {
		own.Source = sourceGroup
	}
	var chain []kafkaconfig.Synonym
	switch {
	case r.line < 43:
		chain = append([]kafkaconfig.Synonym{own}, r.synonyms(k.name)...)
	case fromBroker:
		chain = r.synonyms(k.brokerName())
	case k.def != nil:
		chain = []kafkaconfig.Synonym{{Name: k.name, Value: k.def, Source: sourceDefault}}
	}
	if isSet && r.line >= 43 {
		chain = append([]kafkaconfig.Synonym{own}, chain...)
	}
	d.synonyms = chain
	return d
}

func groupKeyNamed(name string, line int) (groupKey, bool) {
	for _, k := range groupKeys {
		if k.name == name && k.since <= line {
			return k, true
		}
	}
	return groupKey{}, false
}

// groupBound is one range check of a group config against the controller's
// own bounds. Before 4.4 a failure names the bound's config; from 4.4 it
// gives the numbers.
type groupBound struct {
	key            string
	lo, hi         *int64
	loName, hiName string
	since          int
}

func bounds(key string, lo, hi int64, prefix, what string, since int) groupBound {
	return groupBound{key: key, lo: i64(lo), hi: i64(hi), since: since,
		loName: "group." + prefix + ".min." + what, hiName: "group." + prefix + ".max." + what}
}

// groupBounds are in Apache's order of checking. (Before 4.4 Apache checks
// the assignment intervals only when set, and every other key always, an
// unset one at its default; defaults pass, so checking set keys only, as
// 4.4 does, gives the same answers.)
var groupBounds = []groupBound{
	bounds("consumer.heartbeat.interval.ms", 5000, 15000, "consumer", "heartbeat.interval.ms", 40),
	bounds("consumer.session.timeout.ms", 45000, 60000, "consumer", "session.timeout.ms", 40),
	bounds("consumer.assignment.interval.ms", 0, 15000, "consumer", "assignment.interval.ms", 43),
	bounds("share.heartbeat.interval.ms", 5000, 15000, "share", "heartbeat.interval.ms", 40),
	bounds("share.session.timeout.ms", 45000, 60000, "share", "session.timeout.ms", 40),
	bounds("share.record.lock.duration.ms", 15000, 60000, "share", "record.lock.duration.ms", 40),
	bounds("share.delivery.count.limit", 2, 10, "share", "delivery.count.limit", 43),
	bounds("share.partition.max.record.locks", 100, 4000, "share", "partition.max.record.locks", 43),
	bounds("share.assignment.interval.ms", 0, 15000, "share", "assignment.interval.ms", 43),
	bounds("streams.heartbeat.interval.ms", 5000, 15000, "streams", "heartbeat.interval.ms", 41),
	bounds("streams.session.timeout.ms", 45000, 60000, "streams", "session.timeout.ms", 41),
	{key: "streams.num.standby.replicas", hi: i64(2), hiName: "group.streams.max.standby.replicas", since: 41},
	bounds("streams.assignment.interval.ms", 0, 15000, "streams", "assignment.interval.ms", 43),
	{key: "streams.task.offset.interval.ms", lo: i64(15000), loName: "group.streams.min.task.offset.interval.ms", since: 44},
	{key: "streams.num.warmup.replicas", hi: i64(20), hiName: "group.streams.max.warmup.replicas", since: 44},
}

// groupSessionPairs: each kind's session timeout must exceed its heartbeat
// interval (the controller's defaults stand in for an unset one).
var groupSessionPairs = []struct {
	kind  string
	since int
}{{"consumer", 40}, {"share", 40}, {"streams", 41}}

const (
	defaultGroupSessionMs   = 45000
	defaultGroupHeartbeatMs = 5000
)

// streamsAssignors are the task assignors Apache registers by default.
var streamsAssignors = []string{"sticky"}

// validateGroupConfigs checks a group's whole config after a change, as
// Apache's line does. configs holds no null values.
func validateGroupConfigs(name string, configs map[string]string, r groupRules) *Error {
	line := r.line
	if name == "" {
		return apiErr(kerr.InvalidRequest.Code, "Default group resources are not allowed.")
	}
	for _, k := range sortedKeys(configs) {
		if _, ok := groupKeyNamed(k, line); !ok {
			return apiErr(kerr.InvalidConfig.Code, "Unknown group config name: %s", k)
		}
	}
	if v, ok := configs["streams.rack.aware.assignment.tags"]; ok && line >= 44 {
		items := javaList(v)
		for i, item := range items {
			if slices.Contains(items[:i], item) {
				return apiErr(kerr.InvalidConfig.Code, "streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
			}
		}
	}
	ints := map[string]int64{}
	for _, k := range groupKeys {
		v, set := configs[k.name]
		if !set || k.since > line {
			continue
		}
		n, err := parseConfigValue(k.name, v, k.typ, k.atLeast)
		if err != nil {
			return err
		}
		if k.check != nil {
			if err := k.check(k.name, v, line); err != nil {
				return err
			}
		}
		if k.typ == typeInt || k.typ == typeLong {
			ints[k.name] = n
		}
	}
	if err := checkGroupBounds(ints, r); err != nil {
		return err
	}
	if line >= 44 {
		if v, ok := configs["streams.assignor.name"]; ok && !slices.Contains(streamsAssignors, strings.TrimSpace(v)) {
			return apiErr(kerr.InvalidConfig.Code, "streams.assignor.name '%s' is not a registered task assignor. Registered assignors are: [%s].",
				strings.TrimSpace(v), strings.Join(streamsAssignors, ", "))
		}
	}
	for _, p := range groupSessionPairs {
		if p.since > line {
			continue
		}
		sk, hk := p.kind+".session.timeout.ms", p.kind+".heartbeat.interval.ms"
		s, sSet := ints[sk]
		h, hSet := ints[hk]
		if !sSet {
			s = r.brokerInt("group."+sk, defaultGroupSessionMs)
		}
		if !hSet {
			h = r.brokerInt("group."+hk, defaultGroupHeartbeatMs)
		}
		if (sSet || hSet) && s <= h {
			return apiErr(kerr.InvalidConfig.Code, "%s must be greater than %s", sk, hk)
		}
	}
	if line >= 44 {
		if v := strings.TrimSpace(configs["errors.deadletterqueue.topic.name"]); strings.HasPrefix(v, "__") {
			return apiErr(kerr.InvalidConfig.Code, "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
		}
	}
	return nil
}

// checkGroupBounds applies groupBounds, with the node's own group.* bound
// keys, to the integer keys that are set. Before 4.4 Apache checks every
// key, unset ones at the node's values, which its own start-up checked
// against the same bounds; so checking the set ones gives the same answer.
func checkGroupBounds(ints map[string]int64, r groupRules) *Error {
	line := r.line
	for _, b := range groupBounds {
		v, set := ints[b.key]
		if !set || b.since > line {
			continue
		}
		var lo, hi *int64
		if b.lo != nil {
			lo = i64(r.brokerInt(b.loName, *b.lo))
		}
		if b.hi != nil {
			hi = i64(r.brokerInt(b.hiName, *b.hi))
		}
		low, high := lo != nil && v < *lo, hi != nil && v > *hi
		if !low && !high {
			continue
		}
		if line < 44 {
			if low {
				return apiErr(kerr.InvalidConfig.Code, "%s must be greater than or equal to %s", b.key, b.loName)
			}
			return apiErr(kerr.InvalidConfig.Code, "%s must be less than or equal to %s", b.key, b.hiName)
		}
		switch {
		case lo != nil && hi != nil:
			return apiErr(kerr.InvalidConfig.Code, "%s must be in the range %d to %d inclusive.", b.key, *lo, *hi)
		case hi != nil:
			return apiErr(kerr.InvalidConfig.Code, "%s must be less than or equal to %d", b.key, *hi)
		default:
			return apiErr(kerr.InvalidConfig.Code, "%s must be greater than or equal to %d", b.key, *lo)
		}
	}
	return nil
}

// parseConfigValue parses a value as Apache's ConfigDef does (trimmed;
// the message quotes it untrimmed) and applies an atLeast bound. It returns
// the number for INT and LONG keys.
func parseConfigValue(name, value string, typ kmsg.ConfigType, atLeast *int64) (int64, *Error) {
	bad := func(why string) *Error {
		return apiErr(kerr.InvalidConfig.Code, "Invalid value %s for configuration %s: %s", value, name, why)
	}
	v := strings.TrimSpace(value)
	switch typ {
	case typeInt, typeLong:
		bits, what := 32, "INT"
		if typ == typeLong {
			bits, what = 64, "LONG"
		}
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return 0, bad("Not a number of type " + what)
		}
		if atLeast != nil && n < *atLeast {
			return 0, apiErr(kerr.InvalidConfig.Code, "Invalid value %d for configuration %s: Value must be at least %d", n, name, *atLeast)
		}
		return n, nil
	case typeBoolean:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return 0, bad("Expected value to be either true or false")
		}
	}
	return 0, nil
}

// javaList splits a LIST value as ConfigDef does: trimmed, empty for "",
// else split at commas with the spaces around them, empty items kept.
func javaList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	return listSplit.Split(v, -1)
}

var listSplit = regexp.MustCompile(`\s*,\s*`)

// nonEmptyItems is ValidList.anyNonDuplicateValues(true, false) as parsing
// reaches it (4.2+: duplicates are dropped before it runs).
func nonEmptyItems(name, value string, line int) *Error {
	if line < 42 {
		return nil
	}
	if slices.Contains(javaList(value), "") {
		return apiErr(kerr.InvalidConfig.Code, "Configuration '%s' values must not be empty.", name)
	}
	return nil
}

func oneOf(allowed ...string) func(name, value string, line int) *Error {
	return func(name, value string, _ int) *Error {
		if v := strings.TrimSpace(value); !slices.Contains(allowed, v) {
			return apiErr(kerr.InvalidConfig.Code, "Invalid value %s for configuration %s: String must be one of: %s", v, name, strings.Join(allowed, ", "))
		}
		return nil
	}
}

// checkShareOffsetReset accepts earliest, latest and by_duration:<ISO-8601
// duration, not negative>, as ShareGroupAutoOffsetResetStrategy does.
func checkShareOffsetReset(name, value string, line int) *Error {
	v := strings.TrimSpace(value)
	if v == "earliest" || v == "latest" {
		return nil
	}
	if d, ok := strings.CutPrefix(v, "by_duration:"); ok {
		if dur, err := parseISODuration(d); err == nil && dur >= 0 {
			return nil
		}
	}
	format := "'by_duration:<PnDTnHnMn.nS>'."
	if line < 41 {
		format = "'by_duration:<PnDTnHnMn.nS.>'."
	}
	return apiErr(kerr.InvalidConfig.Code, "Invalid value %s for configuration %s: Invalid value `%s` for configuration %s. "+
		"The value must be either 'earliest', 'latest' or of the format %s", v, name, v, name, format)
}

// isoDuration is java.time.Duration's text form: PnDTnHnMn.nS, each part
// optional but at least one, signs allowed on each.
var isoDuration = regexp.MustCompile(`^([-+]?)[Pp](?:([-+]?[0-9]+)[Dd])?(?:[Tt](?:([-+]?[0-9]+)[Hh])?(?:([-+]?[0-9]+)[Mm])?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?[Ss])?)?$`)

// parseISODuration parses java.time.Duration text; overflow is an error.
func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || (m[2] == "" && m[3] == "" && m[4] == "" && m[5] == "") || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, fmt.Errorf("not an ISO-8601 duration: %q", s)
	}
	var total time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+2] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+2], 10, 64)
		if err != nil || n > int64(1<<62)/int64(unit) || n < -int64(1<<62)/int64(unit) {
			return 0, fmt.Errorf("duration out of range: %q", s)
		}
		total += time.Duration(n) * unit
	}
	if m[6] != "" {
		frac, _ := strconv.ParseInt((m[6] + "000000000")[:9], 10, 64)
		if strings.HasPrefix(m[5], "-") {
			frac = -frac
		}
		total += time.Duration(frac)
	}
	if m[1] == "-" {
		total = -total
	}
	return total, nil
}

// isGroupOrClientMetrics reports the resource types whose whole config is
// checked after a change (alterWholeConfig).
func isGroupOrClientMetrics(typ int8) bool {
	return typ == resourceGroup || typ == resourceClientMetrics
}

// alterWholeConfig turns changes (a nil value deletes the key) to a GROUP
// or CLIENT_METRICS resource into ConfigRecords once the resulting config
// passes its line's checks; like Apache, only keys whose value changes get
// a record.
func alterWholeConfig(current map[string]string, res metadata.ConfigResource, changes map[string]*string, r groupRules) ([]metadata.Record, *Error) {
	line := r.line
	all := maps.Clone(current)
	if all == nil {
		all = map[string]string{}
	}
	var recs []metadata.Record
	for _, name := range sortedKeys(changes) {
		v := changes[name]
		old, had := current[name]
		if v == nil {
			delete(all, name)
		} else {
			all[name] = *v
		}
		if (v == nil && !had) || (v != nil && had && old == *v) {
			continue
		}
		if v != nil && line >= 41 && utf16Len(*v) > maxConfigValueChars {
			return nil, apiErr(kerr.InvalidConfig.Code, "The configuration value cannot be added because it exceeds the maximum value size of %d bytes.", maxConfigValueChars)
		}
		recs = append(recs, &metadata.ConfigRecord{ResourceType: res.ResourceType, ResourceName: res.Name, Name: name, Value: v})
	}
	var err *Error
	if res.ResourceType == resourceGroup {
		err = validateGroupConfigs(res.Name, all, r)
	} else {
		err = validateClientMetricsConfigs(res.Name, all, line)
	}
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// utf16Len is a string's length as Java counts it.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// describedKey is one config of a DescribeConfigs answer with its synonyms
// (its source is the first one's, DEFAULT_CONFIG if there are none).
type describedKey struct {
	name     string
	value    *string
	typ      kmsg.ConfigType
	synonyms []kafkaconfig.Synonym
}

// describeGroupOrClientMetrics lists a group's or a client metrics
// subscription's configs as Apache's ConfigHelper does from its image:
// every key of the line (a 4.4 internal key only when set), the set ones
// with their own source, the rest at their defaults. Before 4.1 a
// subscription lists only what it sets.
func describeGroupOrClientMetrics(res metadata.ConfigResource, set map[string]string, r groupRules) ([]describedKey, *Error) {
	var out []describedKey
	if res.ResourceType == resourceGroup {
		if res.Name == "" {
			return nil, apiErr(kerr.InvalidRequest.Code, "Group name must not be empty")
		}
		for _, k := range groupKeys {
			if _, isSet := set[k.name]; k.since <= r.line && (!k.internal || isSet) {
				out = append(out, describeGroupKey(k, set, r))
			}
		}
	} else {
		if res.Name == "" {
			return nil, apiErr(kerr.InvalidRequest.Code, "Client metrics subscription name must not be empty")
		}
		for _, k := range clientMetricsKeys {
			v, isSet := set[k.name]
			switch {
			case isSet:
				out = append(out, describedKey{k.name, &v, k.typ, []kafkaconfig.Synonym{{Name: k.name, Value: &v, Source: sourceClientMetrics}}})
			case r.line >= 41:
				out = append(out, describedKey{name: k.name, value: kmsg.StringPtr(k.def), typ: k.typ})
			}
		}
	}
	slices.SortFunc(out, func(a, b describedKey) int { return strings.Compare(a.name, b.name) })
	return out, nil
}
