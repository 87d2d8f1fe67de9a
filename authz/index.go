package authz

import (
	"net/netip"
	"slices"
	"sync"

	"github.com/kraftd/kraftd/metadata"
)

// mvCIDRHosts is metadata.version 4.4-IV1, from which an ACL's host may be
// a CIDR range (KIP-1276). Below it a host such as "10.0.0.0/8" is matched
// only as the literal text, as Apache 4.1 does.
const mvCIDRHosts = 32

// Index holds the committed ACLs, grouped for lookup. It is safe for
// concurrent use: one writer (the node's replay) and many readers (the
// request handlers).
type Index struct {
	mu       sync.RWMutex
	byID     map[metadata.Uuid]ACL
	literal  map[resourceKey][]entry
	prefixed map[resourceKey][]entry
	// prefixLengths counts, per resource type, the PREFIXED ACL names of
	// each length; lengths is the same set sorted, which Authorize walks.
	prefixLengths map[ResourceType]map[int]int
	lengths       map[ResourceType][]int
	cidrHosts     bool
}

type resourceKey struct {
	t    ResourceType
	name string
}

// entry is an ACL without its resource, which its map key gives.
type entry struct {
	id         metadata.Uuid
	principal  string
	host       string
	cidr       netip.Prefix // valid when host is a CIDR range
	op         Operation
	permission Permission
}

// NewIndex returns an index with no ACLs.
func NewIndex() *Index {
	x := &Index{}
	x.reset()
	return x
}

func (x *Index) reset() {
	x.byID = map[metadata.Uuid]ACL{}
	x.literal = map[resourceKey][]entry{}
	x.prefixed = map[resourceKey][]entry{}
	x.prefixLengths = map[ResourceType]map[int]int{}
	x.lengths = map[ResourceType][]int{}
	x.cidrHosts = false
}

// Load replaces the index with the ACLs of an image (a snapshot loaded).
func (x *Index) Load(im *metadata.Image) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.reset()
	x.cidrHosts = im.Features["metadata.version"] >= mvCIDRHosts
	for id, rec := range im.ACLs {
		x.add(id, fromRecord(&rec))
	}
}

// Apply updates the index with one committed record; records that do not
// concern ACLs are ignored. Removing an id the index lacks does nothing
// (the image reports that broken log).
func (x *Index) Apply(rec metadata.Record) {
	switch r := rec.(type) {
	case *metadata.AccessControlEntryRecord:
		x.mu.Lock()
		defer x.mu.Unlock()
		x.remove(r.Id)
		x.add(r.Id, fromRecord(r))
	case *metadata.RemoveAccessControlEntryRecord:
		x.mu.Lock()
		defer x.mu.Unlock()
		x.remove(r.Id)
	case *metadata.FeatureLevelRecord:
		if r.Name == "metadata.version" {
			x.mu.Lock()
			defer x.mu.Unlock()
			x.cidrHosts = r.FeatureLevel >= mvCIDRHosts
		}
	}
}

// FromRecord turns an ACL record into an ACL.
func fromRecord(r *metadata.AccessControlEntryRecord) ACL {
	return ACL{ResourceType(r.ResourceType), r.ResourceName, PatternType(r.PatternType), r.Principal, r.Host,
		Operation(r.Operation), Permission(r.PermissionType)}
}

// Len is the number of ACLs.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byID)
}

// ACLs returns every ACL with its id, for DescribeAcls and DeleteAcls.
func (x *Index) ACLs() map[metadata.Uuid]ACL {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make(map[metadata.Uuid]ACL, len(x.byID))
	for id, a := range x.byID {
		out[id] = a
	}
	return out
}

func (x *Index) add(id metadata.Uuid, a ACL) {
	x.byID[id] = a
	e := entry{id: id, principal: a.Principal, host: a.Host, op: a.Operation, permission: a.Permission}
	if p, err := netip.ParsePrefix(a.Host); err == nil {
		e.cidr = p
	}
	k := resourceKey{a.ResourceType, a.ResourceName}
	switch a.PatternType {
	case PatternLiteral:
		x.literal[k] = append(x.literal[k], e)
	case PatternPrefixed:
		x.prefixed[k] = append(x.prefixed[k], e)
		counts := x.prefixLengths[a.ResourceType]
		if counts == nil {
			counts = map[int]int{}
			x.prefixLengths[a.ResourceType] = counts
		}
		if counts[len(a.ResourceName)]++; counts[len(a.ResourceName)] == 1 {
			x.lengths[a.ResourceType] = sortedLengths(counts)
		}
	}
	// Other pattern types match nothing; Apache's controller never writes them.
}

func (x *Index) remove(id metadata.Uuid) {
	a, ok := x.byID[id]
	if !ok {
		return
	}
	delete(x.byID, id)
	k := resourceKey{a.ResourceType, a.ResourceName}
	switch a.PatternType {
	case PatternLiteral:
		dropEntry(x.literal, k, id)
	case PatternPrefixed:
		dropEntry(x.prefixed, k, id)
		counts := x.prefixLengths[a.ResourceType]
		if counts[len(a.ResourceName)]--; counts[len(a.ResourceName)] == 0 {
			delete(counts, len(a.ResourceName))
			x.lengths[a.ResourceType] = sortedLengths(counts)
		}
	}
}

func dropEntry(m map[resourceKey][]entry, k resourceKey, id metadata.Uuid) {
	es := slices.DeleteFunc(m[k], func(e entry) bool { return e.id == id })
	if len(es) == 0 {
		delete(m, k)
		return
	}
	m[k] = es
}

func sortedLengths(counts map[int]int) []int {
	ls := make([]int, 0, len(counts))
	for l := range counts {
		ls = append(ls, l)
	}
	slices.Sort(ls)
	return ls
}
