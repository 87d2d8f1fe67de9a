package metadata

import (
	"errors"
	"testing"
)

// TestFreezeKeepsItsView: random logs (topic removals, reassignments,
// transactions, runs of partition changes through ApplyAll) applied to an
// image that is frozen every few records: each frozen copy keeps the hash
// it had when it was taken, refuses records, and the live image ends up
// exactly as one that was never frozen.
func TestFreezeKeepsItsView(t *testing.T) {
	for seed := range uint64(50) {
		log := randomLog(seed, 400)
		live, want := NewImage(), NewImage()
		live.PartitionsOfBroker(1) // the indexes are kept through freezes
		type view struct {
			im   *Image
			hash [32]byte
		}
		var views []view
		for i := 0; i < len(log); {
			n := min(len(log)-i, 1+int(seed+uint64(i))%23)
			live.ApplyAll(log[i : i+n])
			for _, r := range log[i : i+n] {
				want.Apply(r)
			}
			i += n
			f := live.Freeze()
			views = append(views, view{f, f.Hash()})
			if f.Hash() != live.Hash() {
				t.Fatalf("seed %d: a frozen copy hashes differently from its source", seed)
			}
		}
		if live.Hash() != want.Hash() {
			t.Fatalf("seed %d: the live image differs from one never frozen", seed)
		}
		for b := range int32(6) {
			if got, exp := live.PartitionsOfBroker(b), want.PartitionsOfBroker(b); !samePartitions(got, exp) {
				t.Fatalf("seed %d broker %d: index %v, want %v", seed, b, got, exp)
			}
		}
		for k, v := range views {
			if v.im.Hash() != v.hash {
				t.Fatalf("seed %d: frozen copy %d changed after it was taken", seed, k)
			}
		}
		if err := views[0].im.Apply(log[len(log)-1]); !errors.Is(err, ErrFrozen) {
			t.Fatalf("seed %d: Apply on a frozen copy: %v", seed, err)
		}
		if _, err := views[0].im.ApplyAll(log[:1]); !errors.Is(err, ErrFrozen) {
			t.Fatalf("seed %d: ApplyAll on a frozen copy: %v", seed, err)
		}
	}
}

// TestCloneOfAFrozenImageApplies: a Freeze copy has no name index, and a
// Clone of it rebuilds one, so that it applies topic records (and refuses
// a second topic of a name) as its source would.
func TestCloneOfAFrozenImageApplies(t *testing.T) {
	live := NewImage()
	applyAll(t, live, clusterRecords())
	applyAll(t, live, []Record{&TopicRecord{Name: "a", TopicId: Uuid{1}}})
	c := live.Freeze().Clone()
	if err := c.Apply(&TopicRecord{Name: "a", TopicId: Uuid{2}}); err == nil {
		t.Fatal("the clone took a second topic named a")
	}
	if err := c.Apply(&TopicRecord{Name: "b", TopicId: Uuid{3}}); err != nil || c.TopicIDs["b"] != (Uuid{3}) {
		t.Fatalf("the clone did not take topic b: %v", err)
	}
}
