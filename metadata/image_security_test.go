package metadata

import (
	"errors"
	"reflect"
	"testing"
)

func quotaEntity(pairs ...string) []ClientQuotaRecordEntityData {
	var out []ClientQuotaRecordEntityData
	for i := 0; i < len(pairs); i += 2 {
		d := ClientQuotaRecordEntityData{EntityType: pairs[i]}
		if pairs[i+1] != "" {
			d.EntityName = ptr(pairs[i+1])
		}
		out = append(out, d)
	}
	return out
}

func TestImageACLs(t *testing.T) {
	im := imageOf(t, clusterRecords())
	acl := &AccessControlEntryRecord{Id: Uuid{1}, ResourceType: 2, ResourceName: "foo", PatternType: 3,
		Principal: "User:alice", Host: "*", Operation: 3, PermissionType: 3, UnknownTags: Tags{{Tag: 9, Data: []byte{1}}}}
	applyAll(t, im, []Record{acl, &AccessControlEntryRecord{Id: Uuid{2}, Principal: "User:bob"}})
	if got := im.ACLs[Uuid{1}]; got.Principal != "User:alice" || got.UnknownTags != nil {
		t.Errorf("ACL 1: %+v", got)
	}
	recs, err := im.Records()
	if err != nil {
		t.Fatal(err)
	}
	if got := imageOf(t, recs); got.Hash() != im.Hash() || len(got.ACLs) != 2 {
		t.Fatalf("rebuilt image: %v", got.ACLs)
	}
	applyAll(t, im, []Record{&RemoveAccessControlEntryRecord{Id: Uuid{1}}})
	if _, ok := im.ACLs[Uuid{1}]; ok || len(im.ACLs) != 1 {
		t.Errorf("after removal: %v", im.ACLs)
	}
	// As in Apache, removing an ACL that is not there breaks the log.
	if err := im.Apply(&RemoveAccessControlEntryRecord{Id: Uuid{1}}); !errors.Is(err, ErrBadRecord) {
		t.Errorf("removing an unknown ACL: %v", err)
	}
}

func TestImageClientQuotas(t *testing.T) {
	im := imageOf(t, clusterRecords())
	alice := NewQuotaEntity(quotaEntity("user", "alice", "client-id", "app"))
	applyAll(t, im, []Record{
		&ClientQuotaRecord{Entity: quotaEntity("user", "alice", "client-id", "app"), QuotaKey: "producer_byte_rate", Value: 1024},
		// The same entity with its pairs in the other order.
		&ClientQuotaRecord{Entity: quotaEntity("client-id", "app", "user", "alice"), QuotaKey: "consumer_byte_rate", Value: 2048},
		// The default user is another entity than a user named "".
		&ClientQuotaRecord{Entity: quotaEntity("user", ""), QuotaKey: "producer_byte_rate", Value: 1},
		&ClientQuotaRecord{Entity: []ClientQuotaRecordEntityData{{EntityType: "user", EntityName: ptr("")}}, QuotaKey: "producer_byte_rate", Value: 2},
	})
	if got := im.ClientQuotas[alice]; !reflect.DeepEqual(got, map[string]float64{"producer_byte_rate": 1024, "consumer_byte_rate": 2048}) {
		t.Errorf("alice/app: %v", got)
	}
	if len(im.ClientQuotas) != 3 {
		t.Errorf("entities: %v", im.ClientQuotas)
	}
	if got, want := alice.Entries(), quotaEntity("client-id", "app", "user", "alice"); !reflect.DeepEqual(got, want) {
		t.Errorf("Entries: %+v", got)
	}
	if s := NewQuotaEntity(quotaEntity("user", "")).String(); s != "{user=<default>}" {
		t.Errorf("String: %s", s)
	}
	recs, err := im.Records()
	if err != nil {
		t.Fatal(err)
	}
	if got := imageOf(t, recs); got.Hash() != im.Hash() || !reflect.DeepEqual(got.ClientQuotas, im.ClientQuotas) {
		t.Fatalf("rebuilt quotas: %v", got.ClientQuotas)
	}
	applyAll(t, im, []Record{&ClientQuotaRecord{Entity: quotaEntity("user", "alice", "client-id", "app"), QuotaKey: "producer_byte_rate", Remove: true}})
	if got := im.ClientQuotas[alice]; !reflect.DeepEqual(got, map[string]float64{"consumer_byte_rate": 2048}) {
		t.Errorf("after removing one key: %v", got)
	}
	// Removing the last key drops the entity.
	applyAll(t, im, []Record{&ClientQuotaRecord{Entity: quotaEntity("user", "alice", "client-id", "app"), QuotaKey: "consumer_byte_rate", Remove: true}})
	if _, ok := im.ClientQuotas[alice]; ok || len(im.ClientQuotas) != 2 {
		t.Errorf("entity with no quotas left: %v", im.ClientQuotas)
	}
}

func TestImageScramAndTokens(t *testing.T) {
	im := imageOf(t, clusterRecords()) // metadata.version 27
	applyAll(t, im, []Record{
		&UserScramCredentialRecord{Name: "alice", Mechanism: 1, Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096},
		&UserScramCredentialRecord{Name: "alice", Mechanism: 2, Iterations: 8192},
		&DelegationTokenRecord{TokenId: "t1", Owner: "User:alice", Renewers: []string{"User:bob"}, MaxTimestamp: 10},
		&DelegationTokenRecord{TokenId: "t2", Owner: "User:bob"},
	})
	if len(im.Scram) != 2 || im.Scram[ScramKey{"alice", 2}].Iterations != 8192 || len(im.DelegationTokens) != 2 {
		t.Fatalf("scram %v tokens %v", im.Scram, im.DelegationTokens)
	}
	recs, err := im.Records()
	if err != nil {
		t.Fatal(err)
	}
	if got := imageOf(t, recs); got.Hash() != im.Hash() || len(got.Scram) != 2 || len(got.DelegationTokens) != 2 {
		t.Fatal("rebuilt image differs")
	}
	applyAll(t, im, []Record{
		&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 1},
		&RemoveDelegationTokenRecord{TokenId: "t1"},
		// Removing what is not there is no error, as in Apache.
		&RemoveUserScramCredentialRecord{Name: "nobody", Mechanism: 1},
		&RemoveDelegationTokenRecord{TokenId: "none"},
	})
	if _, ok := im.Scram[ScramKey{"alice", 1}]; ok || len(im.Scram) != 1 {
		t.Errorf("scram after removal: %v", im.Scram)
	}
	if _, ok := im.DelegationTokens["t1"]; ok || len(im.DelegationTokens) != 1 {
		t.Errorf("tokens after removal: %v", im.DelegationTokens)
	}
}

// TestSecurityWriteOrder: the security records come where Apache's
// MetadataImage.write puts them: quotas after configs and before the
// producer ids, then ACLs, SCRAM, tokens last.
func TestSecurityWriteOrder(t *testing.T) {
	im := imageOf(t, append(clusterRecords(),
		&DelegationTokenRecord{TokenId: "t"},
		&UserScramCredentialRecord{Name: "u", Mechanism: 1},
		&AccessControlEntryRecord{Id: Uuid{1}},
		&ClientQuotaRecord{Entity: quotaEntity("user", "u"), QuotaKey: "k", Value: 1}))
	recs, err := im.Records()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range recs[len(recs)-6:] {
		names = append(names, RecordName(r.Key()))
	}
	want := []string{"ConfigRecord", "ClientQuotaRecord", "ProducerIdsRecord", "AccessControlEntryRecord",
		"UserScramCredentialRecord", "DelegationTokenRecord"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
}

// TestSecurityTransactions: security records inside a transaction apply at
// its end, and an aborted or failed transaction leaves no trace.
func TestSecurityTransactions(t *testing.T) {
	base := append(clusterRecords(),
		&AccessControlEntryRecord{Id: Uuid{1}, Principal: "User:old"},
		&ClientQuotaRecord{Entity: quotaEntity("user", "u"), QuotaKey: "k", Value: 1},
		&UserScramCredentialRecord{Name: "u", Mechanism: 1, Iterations: 1},
		&DelegationTokenRecord{TokenId: "t", Owner: "User:old"})
	txn := []Record{
		&BeginTransactionRecord{},
		&AccessControlEntryRecord{Id: Uuid{1}, Principal: "User:new"},
		&AccessControlEntryRecord{Id: Uuid{2}},
		&ClientQuotaRecord{Entity: quotaEntity("user", "u"), QuotaKey: "k", Remove: true},
		&ClientQuotaRecord{Entity: quotaEntity("user", "v"), QuotaKey: "k", Value: 2},
		&UserScramCredentialRecord{Name: "u", Mechanism: 1, Iterations: 2},
		&RemoveUserScramCredentialRecord{Name: "u", Mechanism: 1},
		&UserScramCredentialRecord{Name: "v", Mechanism: 2},
		&RemoveDelegationTokenRecord{TokenId: "t"},
		&DelegationTokenRecord{TokenId: "t2"},
	}
	want := imageOf(t, base).Hash()

	aborted := imageOf(t, base)
	applyAll(t, aborted, append(txn, &AbortTransactionRecord{}))
	if aborted.Hash() != want {
		t.Error("an aborted transaction left a trace")
	}

	// A transaction that fails at its end (an unknown ACL removal after all
	// the changes) is undone through the journal.
	failed := imageOf(t, base)
	applyAll(t, failed, append(txn, &RemoveAccessControlEntryRecord{Id: Uuid{9}}))
	if err := failed.Apply(&EndTransactionRecord{}); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("failed transaction: %v", err)
	}
	if failed.Hash() != want || failed.ACLs[Uuid{1}].Principal != "User:old" || len(failed.ClientQuotas) != 1 ||
		failed.Scram[ScramKey{"u", 1}].Iterations != 1 || len(failed.DelegationTokens) != 1 {
		t.Errorf("a failed transaction left a trace: %v %v %v %v", failed.ACLs, failed.ClientQuotas, failed.Scram, failed.DelegationTokens)
	}

	committed := imageOf(t, base)
	applyAll(t, committed, append(txn, &EndTransactionRecord{}))
	if committed.ACLs[Uuid{1}].Principal != "User:new" || len(committed.ACLs) != 2 || len(committed.ClientQuotas) != 1 ||
		len(committed.Scram) != 1 || len(committed.DelegationTokens) != 1 {
		t.Errorf("committed: %v %v %v %v", committed.ACLs, committed.ClientQuotas, committed.Scram, committed.DelegationTokens)
	}
}

// TestSecurityClone: a clone's security state is its own.
func TestSecurityClone(t *testing.T) {
	im := imageOf(t, append(clusterRecords(),
		&AccessControlEntryRecord{Id: Uuid{1}},
		&ClientQuotaRecord{Entity: quotaEntity("user", "u"), QuotaKey: "k", Value: 1}))
	clone := im.Clone()
	before := im.Hash()
	if clone.Hash() != before {
		t.Fatal("clone hashes differently")
	}
	applyAll(t, clone, []Record{
		&RemoveAccessControlEntryRecord{Id: Uuid{1}},
		&ClientQuotaRecord{Entity: quotaEntity("user", "u"), QuotaKey: "k2", Value: 2},
		&UserScramCredentialRecord{Name: "u", Mechanism: 1},
		&DelegationTokenRecord{TokenId: "t"},
	})
	if im.Hash() != before || len(im.ClientQuotas[NewQuotaEntity(quotaEntity("user", "u"))]) != 1 {
		t.Error("changing the clone changed the source")
	}
}
