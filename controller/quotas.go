package controller

import (
	"context"
	"maps"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// Client quotas, as Apache's ClientQuotaControlManager writes them and its
// ClientQuotasImage describes them. An entity is a set of (type, name)
// pairs over user, client-id and ip, a nil name being the type's default;
// ip combines with nothing, user and client-id with each other. Each key
// has a type that bounds its value.

// Quota entity types (ClientQuotaEntity).
const (
	quotaUser     = "user"
	quotaClientID = "client-id"
	quotaIP       = "ip"
)

// quotaKeyType is the ConfigDef type of a quota key, which decides how a
// value is checked: integral types refuse fractions and values beyond their
// range.
type quotaKeyType int

const (
	quotaDouble quotaKeyType = iota
	quotaInt
	quotaLong
)

// userClientQuotaKeys are the keys of user and client-id entities, ipQuotaKeys
// those of ip entities (QuotaConfig).
var (
	userClientQuotaKeys = map[string]quotaKeyType{
		"producer_byte_rate":       quotaLong,
		"consumer_byte_rate":       quotaLong,
		"request_percentage":       quotaDouble,
		"controller_mutation_rate": quotaDouble,
	}
	ipQuotaKeys = map[string]quotaKeyType{"connection_creation_rate": quotaInt}
)

// quotaEntityText renders an entity as Apache's ClientQuotaEntity.toString
// does (its map in type order: Java's hash order is no contract).
func quotaEntityText(e metadata.QuotaEntity) string {
	var parts []string
	for _, d := range e.Entries() {
		name := "null"
		if d.EntityName != nil {
			name = *d.EntityName
		}
		parts = append(parts, d.EntityType+"="+name)
	}
	return "ClientQuotaEntity(entries={" + strings.Join(parts, ", ") + "})"
}

// quotaAlteration is one entry of AlterClientQuotas: its entity with each
// type once (the last name given wins, as the request's map keeps it).
type quotaAlteration struct {
	entity metadata.QuotaEntity
	ops    []kmsg.AlterClientQuotasRequestEntryOp
}

// resolvableHosts lists the ip entity names of req that are neither an IP
// literal nor the default and that resolve, which Apache accepts as ip
// entities (InetAddress.getByName). It does the lookups the core may not.
func resolvableHosts(ctx context.Context, req *kmsg.AlterClientQuotasRequest) map[string]bool {
	out := map[string]bool{}
	for _, e := range req.Entries {
		for _, d := range e.Entity {
			if d.Type != quotaIP || d.Name == nil || net.ParseIP(*d.Name) != nil || *d.Name == "" {
				continue
			}
			if _, done := out[*d.Name]; done {
				continue
			}
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			addrs, err := net.DefaultResolver.LookupHost(lctx, *d.Name)
			cancel()
			out[*d.Name] = err == nil && len(addrs) > 0
		}
	}
	return out
}

// AlterClientQuotas validates each entry and writes a ClientQuotaRecord
// per key whose value changes (none when ValidateOnly). resolvable names
// the host names that resolve (resolvableHosts). Every entry is answered:
// a refused one carries its error, the rest NONE.
func (c *Core) AlterClientQuotas(now time.Time, req *kmsg.AlterClientQuotasRequest, resolvable map[string]bool, answer func(*kmsg.AlterClientQuotasResponse, error)) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		recs, results := alterClientQuotas(im, req, resolvable)
		resp.Entries = nil
		for _, e := range slices.Sorted(maps.Keys(results)) {
			out := kmsg.NewAlterClientQuotasResponseEntry()
			for _, d := range e.Entries() {
				out.Entity = append(out.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: d.EntityType, Name: d.EntityName})
			}
			if err := results[e]; err != nil {
				out.ErrorCode, out.ErrorMessage = err.Code, &err.Message
			}
			resp.Entries = append(resp.Entries, out)
		}
		if req.ValidateOnly {
			return nil, nil
		}
		return recs, nil
	}, func(_ written, err error) { answerResp(answer, resp, err) })
}

// alterClientQuotas is ClientQuotaControlManager.alterClientQuotas: the
// records of every valid entry and each entity's result (nil for NONE).
// As in Apache, an entity named twice, or one with a key given twice, is
// answered "Ignoring duplicate entity" (the duplicate-key error is
// overwritten by it), while the records of its first valid appearance
// are still written.
func alterClientQuotas(im *metadata.Image, req *kmsg.AlterClientQuotasRequest, resolvable map[string]bool) ([]metadata.Record, map[metadata.QuotaEntity]*Error) {
	var recs []metadata.Record
	results := map[metadata.QuotaEntity]*Error{}
	for _, entry := range req.Entries {
		alt := quotaAlteration{ops: entry.Ops}
		data := make([]metadata.ClientQuotaRecordEntityData, 0, len(entry.Entity))
		for _, d := range entry.Entity {
			data = append(data, metadata.ClientQuotaRecordEntityData{EntityType: d.Type, EntityName: d.Name})
		}
		alt.entity = metadata.NewQuotaEntity(data)
		keys := map[string]bool{}
		for _, op := range entry.Ops {
			if keys[op.Key] {
				results[alt.entity] = apiErr(kerr.InvalidRequest.Code, "Duplicate quota key %s not updating quota for this entity %s", op.Key, quotaEntityText(alt.entity))
			}
			keys[op.Key] = true
		}
		if _, seen := results[alt.entity]; seen {
			results[alt.entity] = apiErr(kerr.InvalidRequest.Code, "Ignoring duplicate entity %s", quotaEntityText(alt.entity))
			continue
		}
		more, err := alterQuotaEntity(im, alt, resolvable)
		results[alt.entity] = err
		recs = append(recs, more...)
	}
	return recs, results
}

// alterQuotaEntity checks one entity and its ops and returns the records
// that change it.
func alterQuotaEntity(im *metadata.Image, alt quotaAlteration, resolvable map[string]bool) ([]metadata.Record, *Error) {
	entries := alt.entity.Entries()
	keys, err := quotaKeysFor(entries, resolvable)
	if err != nil {
		return nil, err
	}
	current := im.ClientQuotas[alt.entity]
	var recs []metadata.Record
	for _, op := range alt.ops {
		if op.Remove {
			if _, has := current[op.Key]; has {
				recs = append(recs, &metadata.ClientQuotaRecord{Entity: entries, QuotaKey: op.Key, Remove: true})
			}
			continue
		}
		if err := validateQuotaValue(keys, op.Key, op.Value); err != nil {
			return nil, err
		}
		if old, has := current[op.Key]; !has || old != op.Value {
			recs = append(recs, &metadata.ClientQuotaRecord{Entity: entries, QuotaKey: op.Key, Value: op.Value})
		}
	}
	return recs, nil
}

// quotaKeysFor checks an entity's types and names and returns the keys its
// combination allows.
func quotaKeysFor(entries []metadata.ClientQuotaRecordEntityData, resolvable map[string]bool) (map[string]quotaKeyType, *Error) {
	if len(entries) == 0 {
		return nil, apiErr(kerr.InvalidRequest.Code, "Invalid empty client quota entity")
	}
	names := map[string]*string{}
	for _, d := range entries {
		switch d.EntityType {
		case quotaUser, quotaClientID, quotaIP:
		default:
			return nil, apiErr(kerr.InvalidRequest.Code, "Unhandled client quota entity type: %s", d.EntityType)
		}
		if d.EntityName != nil && *d.EntityName == "" {
			return nil, apiErr(kerr.InvalidRequest.Code, "Empty %s not supported", d.EntityType)
		}
		names[d.EntityType] = d.EntityName
	}
	ip, hasIP := names[quotaIP]
	if !hasIP {
		return userClientQuotaKeys, nil
	}
	if len(names) > 1 {
		// Apache's message lacks the space between "should" and "not".
		return nil, apiErr(kerr.InvalidRequest.Code, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
	}
	if ip != nil && net.ParseIP(*ip) == nil && !resolvable[*ip] {
		return nil, apiErr(kerr.InvalidRequest.Code, "%s is not a valid IP or resolvable host.", *ip)
	}
	return ipQuotaKeys, nil
}

// validateQuotaValue is ClientQuotaControlManager.validateQuotaKeyValue.
func validateQuotaValue(keys map[string]quotaKeyType, key string, value float64) *Error {
	typ, ok := keys[key]
	if !ok {
		return apiErr(kerr.InvalidRequest.Code, "Invalid configuration key %s", key)
	}
	if !(value > 0) {
		return apiErr(kerr.InvalidRequest.Code, "Quota %s must be greater than 0", key)
	}
	switch typ {
	case quotaInt:
		if value > math.MaxInt32 {
			return apiErr(kerr.InvalidRequest.Code, "Proposed value for %s is too large for an INT.", key)
		}
	case quotaLong:
		if value > math.MaxInt64 {
			return apiErr(kerr.InvalidRequest.Code, "Proposed value for %s is too large for a LONG.", key)
		}
	default:
		return nil
	}
	if math.Abs(math.Mod(value, 1)) > 1e-6 {
		return apiErr(kerr.InvalidRequest.Code, "%s cannot be a fractional value.", key)
	}
	return nil
}

// Quota filter match types (DescribeClientQuotas).
const (
	matchExact     = 0
	matchDefault   = 1
	matchSpecified = 2
)

// DescribeClientQuotas answers from the committed image as Apache's
// ClientQuotasImage.describe does; a bad filter fails the whole request.
// No listener serves it: Apache's controller does not list the key
// (brokers answer it from their image), and since issue 34 neither does
// kraftd's. It stays as the reader of the image's quotas that brokers
// built on this package answer with and the tests check writes through.
func (c *Controller) DescribeClientQuotas(req *kmsg.DescribeClientQuotasRequest) *kmsg.DescribeClientQuotasResponse {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	exact, typed, err := quotaFilter(req.Components)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = err.Code, &err.Message
		return resp
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range slices.Sorted(maps.Keys(c.image.ClientQuotas)) {
		entries := e.Entries()
		if !quotaMatches(entries, exact, typed, req.Strict) {
			continue
		}
		out := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, d := range entries {
			out.Entity = append(out.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: d.EntityType, Name: d.EntityName})
		}
		values := c.image.ClientQuotas[e]
		for _, k := range slices.Sorted(maps.Keys(values)) {
			out.Values = append(out.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: values[k]})
		}
		resp.Entries = append(resp.Entries, out)
	}
	return resp
}

// quotaFilter reads a DescribeClientQuotas filter: the types that must
// have a given name (nil for the default) and those that must be present.
func quotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) (map[string]*string, map[string]bool, *Error) {
	exact, typed := map[string]*string{}, map[string]bool{}
	for _, comp := range components {
		_, dupExact := exact[comp.EntityType]
		switch {
		case comp.EntityType == "":
			return nil, nil, apiErr(kerr.InvalidRequest.Code, "Invalid empty entity type.")
		case dupExact || typed[comp.EntityType]:
			return nil, nil, apiErr(kerr.InvalidRequest.Code, "Entity type %s cannot appear more than once in the filter.", comp.EntityType)
		case comp.EntityType != quotaUser && comp.EntityType != quotaClientID && comp.EntityType != quotaIP:
			return nil, nil, apiErr(kerr.UnsupportedVersion.Code, "Unsupported entity type %s", comp.EntityType)
		}
		switch comp.MatchType {
		case matchExact:
			if comp.Match == nil {
				return nil, nil, apiErr(kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[comp.EntityType] = comp.Match
		case matchDefault, matchSpecified:
			if comp.Match != nil {
				return nil, nil, apiErr(kerr.InvalidRequest.Code, "Request specified %s, but also specified a match string.", matchName(comp.MatchType))
			}
			if comp.MatchType == matchDefault {
				exact[comp.EntityType] = nil
			} else {
				typed[comp.EntityType] = true
			}
		default:
			return nil, nil, apiErr(kerr.InvalidRequest.Code, "Unknown match type %d", comp.MatchType)
		}
	}
	has := func(t string) bool { _, ok := exact[t]; return ok || typed[t] }
	if has(quotaIP) && (has(quotaUser) || has(quotaClientID)) {
		return nil, nil, apiErr(kerr.InvalidRequest.Code, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	return exact, typed, nil
}

func matchName(t kmsg.QuotasMatchType) string {
	if t == matchDefault {
		return "MATCH_TYPE_DEFAULT"
	}
	return "MATCH_TYPE_SPECIFIED"
}

func quotaMatches(entries []metadata.ClientQuotaRecordEntityData, exact map[string]*string, typed map[string]bool, strict bool) bool {
	if strict && len(entries) != len(exact)+len(typed) {
		return false
	}
	names := map[string]*string{}
	for _, d := range entries {
		names[d.EntityType] = d.EntityName
	}
	for t, want := range exact {
		got, ok := names[t]
		if !ok || (got == nil) != (want == nil) || (got != nil && *got != *want) {
			return false
		}
	}
	for t := range typed {
		if _, ok := names[t]; !ok {
			return false
		}
	}
	return true
}

// AlterClientQuotas: see Core.AlterClientQuotas; the host names among the
// ip entities are resolved here, outside the core.
func (c *Controller) AlterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) (*kmsg.AlterClientQuotasResponse, error) {
	resolvable := resolvableHosts(ctx, req)
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.AlterClientQuotasResponse, error)) {
		core.AlterClientQuotas(now, req, resolvable, answer)
	})
}
