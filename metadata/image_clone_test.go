package metadata

import (
	"slices"
	"testing"
)

// TestCloneIsIndependent: a clone hashes like its source and shares its
// topics (copy on write), and records applied afterwards to either one
// (random logs: topic removals, reassignments, transactions) change only
// that one: each ends up exactly as an image that applied its own records
// from the start.
func TestCloneIsIndependent(t *testing.T) {
	for seed := range uint64(50) {
		log := randomLog(seed, 300)
		split := len(log) / 2
		src := NewImage()
		for _, r := range log[:split] {
			src.Apply(r)
		}
		src.PartitionsOfBroker(1) // build the index, so the clone copies one
		clone := src.Clone()
		if clone.Hash() != src.Hash() {
			t.Fatalf("seed %d: clone hashes differently", seed)
		}
		for id, top := range src.Topics {
			if clone.Topics[id] != top {
				t.Fatalf("seed %d: Clone copied topic %s; it is shared until one side changes it", seed, top.Name)
			}
		}
		before := src.Hash()
		// The clone goes on with the log; the source must not notice.
		for _, r := range log[split:] {
			clone.Apply(r)
		}
		if src.Hash() != before {
			t.Fatalf("seed %d: applying to the clone changed the source", seed)
		}
		want := NewImage()
		for _, r := range log {
			want.Apply(r)
		}
		if clone.Hash() != want.Hash() {
			t.Fatalf("seed %d: the clone differs from an image that applied the whole log", seed)
		}
		for b := range int32(6) {
			if got, exp := clone.PartitionsOfBroker(b), want.PartitionsOfBroker(b); !samePartitions(got, exp) {
				t.Fatalf("seed %d broker %d: clone index %v, want %v", seed, b, got, exp)
			}
		}
		// And the other way round: the source applying the rest leaves the
		// clone as it is.
		frozen := src.Clone()
		frozenHash := frozen.Hash()
		for _, r := range log[split:] {
			src.Apply(r)
		}
		if frozen.Hash() != frozenHash {
			t.Fatalf("seed %d: applying to the source changed the clone", seed)
		}
	}
}

func samePartitions(a, b []TopicPartition) bool {
	return slices.EqualFunc(a, b, func(x, y TopicPartition) bool {
		return x.Topic.ID == y.Topic.ID && x.Partition == y.Partition
	})
}
