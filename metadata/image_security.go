package metadata

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// This file keeps the image's security state: ACLs, client quotas, SCRAM
// credentials and delegation tokens, as Apache's AclsImage,
// ClientQuotasImage, ScramImage and DelegationTokenImage do. Each is stored
// as its record normalized to version 0 without unknown tags, because
// Apache's images keep only the fields and a snapshot writes them back at
// version 0; normalizing makes an image and its reloaded snapshot hash alike.

// QuotaEntity identifies what a client quota applies to: a set of
// (entity type, entity name) pairs such as user "alice" with client-id
// "app", where a nil name is the default entity of its type. It is a
// canonical encoding of the pairs (sorted by type, one name per type) so
// that it can key a map and that the same entity spelled in a different
// order is the same key, as Apache's ClientQuotaEntity (a map) is.
type QuotaEntity string

// NewQuotaEntity returns the entity named by a ClientQuotaRecord's pairs.
// A type given twice keeps its last name, as Apache's map does.
func NewQuotaEntity(data []ClientQuotaRecordEntityData) QuotaEntity {
	names := make(map[string]*string, len(data))
	for _, d := range data {
		names[d.EntityType] = d.EntityName
	}
	var b []byte
	for _, typ := range slices.Sorted(maps.Keys(names)) {
		b = binary.AppendUvarint(b, uint64(len(typ)))
		b = append(b, typ...)
		if name := names[typ]; name == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(*name)))
			b = append(b, *name...)
		}
	}
	return QuotaEntity(b)
}

// Entries returns the entity's pairs sorted by entity type. e must come
// from NewQuotaEntity (or be the key of Image.ClientQuotas).
func (e QuotaEntity) Entries() []ClientQuotaRecordEntityData {
	var out []ClientQuotaRecordEntityData
	s := string(e)
	next := func() string {
		n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
		v := s[w : w+int(n)]
		s = s[w+int(n):]
		return v
	}
	for len(s) > 0 {
		d := ClientQuotaRecordEntityData{EntityType: next()}
		hasName := s[0] == 1
		s = s[1:]
		if hasName {
			name := next()
			d.EntityName = &name
		}
		out = append(out, d)
	}
	return out
}

// String renders the entity as type=name pairs, "<default>" for a nil name.
func (e QuotaEntity) String() string {
	var parts []string
	for _, d := range e.Entries() {
		name := "<default>"
		if d.EntityName != nil {
			name = *d.EntityName
		}
		parts = append(parts, d.EntityType+"="+name)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// ScramKey identifies a SCRAM credential: a user's credentials are kept
// per mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
type ScramKey struct {
	Name      string
	Mechanism int8
}

// applySecurity applies the security records and ignores any other record
// (the ones the image does not keep, such as ZkMigrationStateRecord).
func (im *Image) applySecurity(rec Record) error {
	switch r := rec.(type) {
	case *AccessControlEntryRecord:
		acl := *r
		acl.Version, acl.UnknownTags = 0, nil
		old, had := im.ACLs[r.Id]
		im.undo(func() { restore(im.ACLs, r.Id, old, had) })
		im.ACLs[r.Id] = acl
	case *RemoveAccessControlEntryRecord:
		// Apache's AclsDelta throws on an unknown id: the log is broken.
		old, had := im.ACLs[r.Id]
		if !had {
			return bad("RemoveAccessControlEntryRecord for unknown ACL %v", r.Id)
		}
		im.undo(func() { im.ACLs[r.Id] = old })
		delete(im.ACLs, r.Id)
	case *ClientQuotaRecord:
		im.setQuota(NewQuotaEntity(r.Entity), r.QuotaKey, r.Value, r.Remove)
	case *UserScramCredentialRecord:
		c := *r
		c.Version, c.UnknownTags = 0, nil
		k := ScramKey{r.Name, r.Mechanism}
		old, had := im.Scram[k]
		im.undo(func() { restore(im.Scram, k, old, had) })
		im.Scram[k] = c
	case *RemoveUserScramCredentialRecord:
		// Removing a credential that is not there is no error in Apache.
		k := ScramKey{r.Name, r.Mechanism}
		if old, had := im.Scram[k]; had {
			im.undo(func() { im.Scram[k] = old })
			delete(im.Scram, k)
		}
	case *DelegationTokenRecord:
		tok := *r
		tok.Version, tok.UnknownTags = 0, nil
		old, had := im.DelegationTokens[r.TokenId]
		im.undo(func() { restore(im.DelegationTokens, r.TokenId, old, had) })
		im.DelegationTokens[r.TokenId] = tok
	case *RemoveDelegationTokenRecord:
		if old, had := im.DelegationTokens[r.TokenId]; had {
			im.undo(func() { im.DelegationTokens[r.TokenId] = old })
			delete(im.DelegationTokens, r.TokenId)
		}
	}
	return nil
}

// setQuota sets key on entity, or deletes it when remove is set; an entity
// left with no keys is dropped, as in Apache. The entity's map is replaced,
// not edited, so that undo can restore the old one and clones can share it.
func (im *Image) setQuota(e QuotaEntity, key string, value float64, remove bool) {
	old, had := im.ClientQuotas[e]
	im.undo(func() { restore(im.ClientQuotas, e, old, had) })
	next := maps.Clone(old)
	if next == nil {
		next = map[string]float64{}
	}
	if remove {
		delete(next, key)
	} else {
		next[key] = value
	}
	if len(next) == 0 {
		delete(im.ClientQuotas, e)
		return
	}
	im.ClientQuotas[e] = next
}

func sortedACLIDs(m map[Uuid]AccessControlEntryRecord) []Uuid {
	ids := slices.Collect(maps.Keys(m))
	slices.SortFunc(ids, func(a, b Uuid) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// sortedScramKeys orders by mechanism, then user, as Apache's ScramImage
// nests them.
func sortedScramKeys(m map[ScramKey]UserScramCredentialRecord) []ScramKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b ScramKey) int {
		return cmp.Or(cmp.Compare(a.Mechanism, b.Mechanism), cmp.Compare(a.Name, b.Name))
	})
}

// security adds the security state to a Hash, in sorted order so that
// map iteration does not show.
func (h *hasher) security(im *Image) {
	h.section("client quotas")
	for _, e := range sortedKeys(im.ClientQuotas) {
		h.str(string(e))
		kv := im.ClientQuotas[e]
		h.int(int64(len(kv)))
		for _, k := range sortedKeys(kv) {
			h.str(k)
			h.int(int64(math.Float64bits(kv[k])))
		}
	}
	h.section("acls")
	for _, id := range sortedACLIDs(im.ACLs) {
		acl := im.ACLs[id]
		h.bytes(acl.AppendTo(h.scratch[:0]))
	}
	h.section("scram")
	for _, k := range sortedScramKeys(im.Scram) {
		c := im.Scram[k]
		h.bytes(c.AppendTo(h.scratch[:0]))
	}
	h.section("delegation tokens")
	for _, id := range sortedKeys(im.DelegationTokens) {
		tok := im.DelegationTokens[id]
		h.bytes(tok.AppendTo(h.scratch[:0]))
	}
}

// Metadata versions from which Apache writes SCRAM credentials and
// delegation tokens to a snapshot (MetadataVersion.isScramSupported,
// isDelegationTokenSupported); below them it reports a loss.
const (
	mvScram            = 11 // 3.5-IV2
	mvDelegationTokens = 14 // 3.6-IV2
)

// clientQuotas writes each entity's quotas, entities and keys sorted (Apache
// walks hash maps; sorted output makes equal images' snapshots equal).
func (w *imageWriter) clientQuotas(im *Image) error {
	for _, e := range sortedKeys(im.ClientQuotas) {
		kv := im.ClientQuotas[e]
		for _, k := range sortedKeys(kv) {
			if err := w.fn(&ClientQuotaRecord{Entity: e.Entries(), QuotaKey: k, Value: kv[k]}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *imageWriter) acls(im *Image) error {
	for _, id := range sortedACLIDs(im.ACLs) {
		acl := im.ACLs[id]
		if err := w.fn(&acl); err != nil {
			return err
		}
	}
	return nil
}

func (w *imageWriter) scram(im *Image) error {
	if len(im.Scram) > 0 && w.mv < mvScram {
		return fmt.Errorf("%w: SCRAM credentials at metadata.version %d", ErrUnwritable, w.mv)
	}
	for _, k := range sortedScramKeys(im.Scram) {
		c := im.Scram[k]
		if err := w.fn(&c); err != nil {
			return err
		}
	}
	return nil
}

func (w *imageWriter) delegationTokens(im *Image) error {
	if len(im.DelegationTokens) > 0 && w.mv < mvDelegationTokens {
		return fmt.Errorf("%w: delegation tokens at metadata.version %d", ErrUnwritable, w.mv)
	}
	for _, id := range sortedKeys(im.DelegationTokens) {
		tok := im.DelegationTokens[id]
		if err := w.fn(&tok); err != nil {
			return err
		}
	}
	return nil
}
