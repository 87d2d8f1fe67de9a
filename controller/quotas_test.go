package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

func strp(s string) *string { return &s }

func quotaEntry(entity map[string]*string, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for t, n := range entity {
		e.Entity = append(e.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: t, Name: n})
	}
	e.Ops = ops
	return e
}

func setQuota(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: v}
}

func removeQuota(key string) kmsg.AlterClientQuotasRequestEntryOp {
	return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Remove: true}
}

func alterQuotas(t *testing.T, c *Controller, validate bool, entries ...kmsg.AlterClientQuotasRequestEntry) *kmsg.AlterClientQuotasResponse {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries, req.ValidateOnly = entries, validate
	resp, err := c.AlterClientQuotas(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Each refusal of Apache's ClientQuotaControlManager, with its code and
// the start of its message; a refused entity writes nothing.
func TestAlterClientQuotasRefusals(t *testing.T) {
	c, _, _ := newTestController(t, LatestMetadataVersion)
	cases := []struct {
		name   string
		entity map[string]*string
		ops    []kmsg.AlterClientQuotasRequestEntryOp
		msg    string
	}{
		{"empty entity", map[string]*string{}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("producer_byte_rate", 1)}, "Invalid empty client quota entity"},
		{"unknown type", map[string]*string{"group": strp("g")}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("producer_byte_rate", 1)}, "Unhandled client quota entity type: group"},
		{"empty name", map[string]*string{"user": strp("")}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("producer_byte_rate", 1)}, "Empty user not supported"},
		{"ip with user", map[string]*string{"ip": nil, "user": strp("a")}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("connection_creation_rate", 1)}, "Invalid quota entity combination"},
		{"bad ip", map[string]*string{"ip": strp("no.such.host.invalid")}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("connection_creation_rate", 1)}, "no.such.host.invalid is not a valid IP or resolvable host."},
		{"ip key on user", map[string]*string{"user": strp("a")}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("connection_creation_rate", 1)}, "Invalid configuration key connection_creation_rate"},
		{"user key on ip", map[string]*string{"ip": strp("127.0.0.1")}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("producer_byte_rate", 1)}, "Invalid configuration key producer_byte_rate"},
		{"zero", map[string]*string{"client-id": strp("c")}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("request_percentage", 0)}, "Quota request_percentage must be greater than 0"},
		{"fraction of a long", map[string]*string{"user": nil}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("consumer_byte_rate", 1.5)}, "consumer_byte_rate cannot be a fractional value."},
		{"too large an int", map[string]*string{"ip": nil}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("connection_creation_rate", 1e10)}, "Proposed value for connection_creation_rate is too large for an INT."},
		{"duplicate key", map[string]*string{"user": strp("d")}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("producer_byte_rate", 1), setQuota("producer_byte_rate", 2)}, "Ignoring duplicate entity ClientQuotaEntity(entries={user=d})"},
		{"bad op after a good one", map[string]*string{"user": strp("e")}, []kmsg.AlterClientQuotasRequestEntryOp{setQuota("producer_byte_rate", 1), setQuota("nope", 2)}, "Invalid configuration key nope"},
	}
	for _, tc := range cases {
		resp := alterQuotas(t, c, false, quotaEntry(tc.entity, tc.ops...))
		if len(resp.Entries) != 1 {
			t.Fatalf("%s: %d entries", tc.name, len(resp.Entries))
		}
		e := resp.Entries[0]
		if e.ErrorCode != kerr.InvalidRequest.Code || e.ErrorMessage == nil || !strings.HasPrefix(*e.ErrorMessage, tc.msg) {
			t.Errorf("%s: code %d message %v, want INVALID_REQUEST %q", tc.name, e.ErrorCode, deref(e.ErrorMessage), tc.msg)
		}
	}
	if n := len(committedQuotas(c)); n != 0 {
		t.Errorf("refused alterations wrote %d entities", n)
	}
}

// Quotas set, changed, validated only and removed, read back through
// DescribeClientQuotas with each match type.
func TestClientQuotasRoundTrip(t *testing.T) {
	c, q, _ := newTestController(t, LatestMetadataVersion)
	alice := map[string]*string{"user": strp("alice"), "client-id": strp("app")}
	resp := alterQuotas(t, c, false,
		quotaEntry(alice, setQuota("producer_byte_rate", 1024), setQuota("request_percentage", 12.5)),
		quotaEntry(map[string]*string{"user": nil}, setQuota("consumer_byte_rate", 2048)),
		quotaEntry(map[string]*string{"ip": strp("127.0.0.1")}, setQuota("connection_creation_rate", 10)),
		quotaEntry(map[string]*string{"ip": strp("localhost")}, setQuota("connection_creation_rate", 5)))
	for _, e := range resp.Entries {
		if e.ErrorCode != 0 {
			t.Fatalf("entry %v: %d %s", e.Entity, e.ErrorCode, deref(e.ErrorMessage))
		}
	}
	before := q.records()
	alterQuotas(t, c, true, quotaEntry(alice, setQuota("producer_byte_rate", 1)))
	alterQuotas(t, c, false, quotaEntry(alice, setQuota("producer_byte_rate", 1024), removeQuota("consumer_byte_rate")))
	if q.records() != before {
		t.Errorf("validate-only and unchanged alterations wrote %d records", q.records()-before)
	}
	aliceKey := metadata.NewQuotaEntity([]metadata.ClientQuotaRecordEntityData{{EntityType: "client-id", EntityName: strp("app")}, {EntityType: "user", EntityName: strp("alice")}})
	if got := committedQuotas(c)[aliceKey]; got["producer_byte_rate"] != 1024 || got["request_percentage"] != 12.5 {
		t.Errorf("alice's quotas %v", got)
	}
	describe := func(strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components, req.Strict = comps, strict
		return c.DescribeClientQuotas(req)
	}
	comp := func(typ string, mt kmsg.QuotasMatchType, match *string) kmsg.DescribeClientQuotasRequestComponent {
		return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: mt, Match: match}
	}
	if r := describe(false); len(r.Entries) != 4 {
		t.Errorf("no filter: %d entries, want 4", len(r.Entries))
	}
	if r := describe(false, comp("user", matchExact, strp("alice"))); len(r.Entries) != 1 || len(r.Entries[0].Values) != 2 {
		t.Errorf("user=alice: %+v", r.Entries)
	}
	if r := describe(true, comp("user", matchExact, strp("alice"))); len(r.Entries) != 0 {
		t.Errorf("strict user=alice matched an entity that also has a client-id: %+v", r.Entries)
	}
	if r := describe(false, comp("user", matchDefault, nil)); len(r.Entries) != 1 || r.Entries[0].Values[0].Value != 2048 {
		t.Errorf("default user: %+v", r.Entries)
	}
	if r := describe(false, comp("ip", matchSpecified, nil)); len(r.Entries) != 2 {
		t.Errorf("any ip: %d entries", len(r.Entries))
	}
	if r := describe(false, comp("ip", matchSpecified, nil), comp("user", matchDefault, nil)); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("ip with user filter: code %d", r.ErrorCode)
	}
	if r := describe(false, comp("group", matchSpecified, nil)); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Errorf("unknown filter type: code %d", r.ErrorCode)
	}
	if r := describe(false, comp("user", matchExact, nil)); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("exact match without a name: code %d", r.ErrorCode)
	}
	alterQuotas(t, c, false, quotaEntry(alice, removeQuota("producer_byte_rate"), removeQuota("request_percentage")))
	if _, has := committedQuotas(c)[aliceKey]; has {
		t.Error("an entity with every quota removed is still in the image")
	}
}

func committedQuotas(c *Controller) map[metadata.QuotaEntity]map[string]float64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.image.ClientQuotas
}
