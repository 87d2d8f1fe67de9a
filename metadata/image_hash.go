package metadata

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"slices"
)

// Hash returns a digest of the image's contents, equal on two images exactly
// when they hold the same data (up to SHA-256 collisions). It does not
// depend on map iteration order or on the order records arrived in beyond
// their effect, so the simulation can compare nodes at equal offsets. An
// open transaction's pending records are not part of it.
func (im *Image) Hash() [32]byte {
	h := &hasher{h: sha256.New()}
	h.section("features")
	for _, name := range sortedKeys(im.Features) {
		h.str(name)
		h.int(int64(im.Features[name]))
	}
	h.section("brokers")
	for _, id := range sortedKeys(im.Brokers) {
		b := im.Brokers[id]
		// The registration is hashed through its own encoding at the newest
		// version, which covers every field.
		b.Version = b.MaxVersion()
		h.bytes(b.AppendTo(h.scratch[:0]))
	}
	h.section("controllers")
	for _, id := range sortedKeys(im.Controllers) {
		c := im.Controllers[id]
		c.Version = c.MaxVersion()
		h.bytes(c.AppendTo(h.scratch[:0]))
	}
	h.section("topics")
	ids := make([]Uuid, 0, len(im.Topics))
	for id := range im.Topics {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b Uuid) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range ids {
		t := im.Topics[id]
		h.bytes(id[:])
		h.str(t.Name)
		h.int(int64(len(t.Partitions)))
		for i := range t.Partitions {
			h.partition(&t.Partitions[i])
		}
	}
	h.section("configs")
	resources := make([]ConfigResource, 0, len(im.Configs))
	for r := range im.Configs {
		resources = append(resources, r)
	}
	slices.SortFunc(resources, func(a, b ConfigResource) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.Name, b.Name))
	})
	for _, r := range resources {
		h.int(int64(r.ResourceType))
		h.str(r.Name)
		kv := im.Configs[r]
		h.int(int64(len(kv)))
		for _, k := range sortedKeys(kv) {
			h.str(k)
			h.str(kv[k])
		}
	}
	// Only the next producer id: like Apache's ProducerIdsImage, a snapshot
	// keeps nothing else of the last assignment.
	h.section("producer ids")
	h.int(im.ProducerIDs.NextProducerId)
	h.security(im)
	var sum [32]byte
	h.h.Sum(sum[:0])
	return sum
}

// hasher writes length-prefixed values, so adjacent values cannot run into
// each other and collide.
type hasher struct {
	h       hash.Hash
	buf     [binary.MaxVarintLen64]byte
	scratch []byte
}

func (h *hasher) int(v int64) {
	h.h.Write(binary.AppendVarint(h.buf[:0], v))
}

func (h *hasher) bytes(b []byte) {
	h.int(int64(len(b)))
	h.h.Write(b)
	if cap(b) > cap(h.scratch) {
		h.scratch = b[:0]
	}
}

func (h *hasher) str(s string) {
	h.int(int64(len(s)))
	h.h.Write([]byte(s))
}

func (h *hasher) section(name string) { h.str(name) }

// int32s hashes a list; nil and empty hash alike, as Apache's partition
// registration holds arrays in which the two are one value.
func (h *hasher) int32s(v []int32) {
	h.int(int64(len(v)))
	for _, x := range v {
		h.int(int64(x))
	}
}

func (h *hasher) partition(p *Partition) {
	if !p.Exists {
		h.int(0)
		return
	}
	h.int(1)
	h.int32s(p.Replicas)
	h.int32s(p.Isr)
	h.int32s(p.RemovingReplicas())
	h.int32s(p.AddingReplicas())
	h.int(int64(len(p.Directories())))
	for _, d := range p.Directories() {
		h.h.Write(d[:])
	}
	h.int32s(p.EligibleLeaderReplicas())
	h.int32s(p.LastKnownElr())
	h.int(int64(p.Leader))
	h.int(int64(p.LeaderEpoch))
	h.int(int64(p.PartitionEpoch))
	h.int(int64(p.LeaderRecoveryState))
}
