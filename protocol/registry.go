package protocol

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// VersionRange is the inclusive range of versions kraftd serves for one key.
type VersionRange struct {
	Min, Max int16
}

// Registry holds the API keys and version ranges kraftd serves. Each handler
// registers its own range at start-up; ApiVersions is derived from it, so the
// advertised ranges can never disagree with what is served.
type Registry struct {
	ranges map[int16]VersionRange
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{ranges: map[int16]VersionRange{}} }

// Register records key's range. Registering a key twice, a range that is
// empty, or one beyond what kmsg can encode is a programming error and panics.
func (r *Registry) Register(key, min, max int16) {
	if _, dup := r.ranges[key]; dup {
		panic(fmt.Sprintf("protocol: key %d registered twice", key))
	}
	req := kmsg.RequestForKey(key)
	if req == nil || min < 0 || min > max || max > req.MaxVersion() {
		panic(fmt.Sprintf("protocol: bad range %d-%d for key %d", min, max, key))
	}
	r.ranges[key] = VersionRange{min, max}
}

// Lookup returns key's range.
func (r *Registry) Lookup(key int16) (VersionRange, bool) {
	v, ok := r.ranges[key]
	return v, ok
}

// Supports reports whether version of key is served.
func (r *Registry) Supports(key, version int16) bool {
	v, ok := r.ranges[key]
	return ok && version >= v.Min && version <= v.Max
}

// Keys returns the registered keys in ascending order.
func (r *Registry) Keys() []int16 {
	keys := make([]int16, 0, len(r.ranges))
	for k := range r.ranges {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ApiKeys lists the registry as ApiVersions response entries.
func (r *Registry) ApiKeys() []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	for _, k := range r.Keys() {
		v := r.ranges[k]
		out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: v.Min, MaxVersion: v.Max})
	}
	return out
}
