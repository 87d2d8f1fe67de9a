package quorum

import (
	"errors"
	"reflect"
	"testing"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

func setOf(ids ...int32) VoterSet {
	s := VoterSet{}
	for _, id := range ids {
		s = append(s, Voter{ID: id, DirectoryID: [16]byte{byte(id)}, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "h", Port: uint16(9000 + id)}}, MaxKRaft: 1})
	}
	return s
}

// The history answers the set in force at any offset, takes back what a
// truncation cuts, and forgets what the log start passed but the entry
// still in force there.
func TestControlHistory(t *testing.T) {
	h := controlHistory{static: StaticVoterSet(map[int32][]Endpoint{9: nil})}
	if got := h.last(); !reflect.DeepEqual(got.IDs(), []int32{9}) {
		t.Fatalf("static set %v", got.IDs())
	}
	if _, ok := h.lastOffset(); ok {
		t.Fatal("a static set has no offset")
	}
	h.kraft = append(h.kraft, kraftAt{-1, 1})
	h.voters = append(h.voters, votersAt{-1, setOf(1)}, votersAt{5, setOf(1, 2)}, votersAt{9, setOf(1, 2, 3)})
	for _, tc := range []struct {
		offset int64
		want   []int32
	}{{-1, []int32{1}}, {4, []int32{1}}, {5, []int32{1, 2}}, {100, []int32{1, 2, 3}}} {
		if kv, set := h.at(tc.offset); kv != 1 || !reflect.DeepEqual(set.IDs(), tc.want) {
			t.Errorf("at %d: kraft.version %d, voters %v; want 1 and %v", tc.offset, kv, set.IDs(), tc.want)
		}
	}
	h.truncateFrom(9)
	if off, _ := h.lastOffset(); off != 5 || !reflect.DeepEqual(h.last().IDs(), []int32{1, 2}) {
		t.Fatalf("after truncating at 9: %v at %d", h.last().IDs(), off)
	}
	h.forgetBefore(7)
	if len(h.voters) != 1 || h.voters[0].offset != 5 || len(h.kraft) != 1 {
		t.Fatalf("after forgetting before 7: %+v %+v", h.voters, h.kraft)
	}
	h.truncateFrom(0)
	if !reflect.DeepEqual(h.last().IDs(), []int32{9}) || h.kraftVersion() != 1 {
		t.Fatalf("after truncating everything: %v, kraft.version %d", h.last().IDs(), h.kraftVersion())
	}
}

// VoterSet keys: a set without a directory id matches any directory of
// the id; one with an id matches only that directory.
func TestVoterSetHas(t *testing.T) {
	s := VoterSet{{ID: 1}, {ID: 2, DirectoryID: [16]byte{2}}}
	for _, tc := range []struct {
		id   int32
		dir  [16]byte
		want bool
	}{{1, [16]byte{7}, true}, {2, [16]byte{2}, true}, {2, [16]byte{3}, false}, {3, [16]byte{}, false}} {
		if got := s.Has(tc.id, tc.dir); got != tc.want {
			t.Errorf("Has(%d, %x) = %v", tc.id, tc.dir[0], got)
		}
	}
	if got := s.with(Voter{ID: 0}).without(2).IDs(); !reflect.DeepEqual(got, []int32{0, 1}) {
		t.Errorf("with 0, without 2: %v", got)
	}
	if !reflect.DeepEqual(s.IDs(), []int32{1, 2}) {
		t.Errorf("with and without changed the set: %v", s.IDs())
	}
}

// FuzzApplyControlBatches feeds bytes, as a leader's Fetch answer carries
// them, to the voter set's state machine: it applies whole control batches,
// or refuses them with ErrBadControlRecord, and never panics; a set it
// takes names each id once.
func FuzzApplyControlBatches(f *testing.F) {
	n := startOfEpochNode(setOf(1, 2), 1, -1)
	f.Add(n.startOfEpochBatch([]int32{1}))
	f.Add(votersBatch(3, 1, 0, setOf(1, 2, 3)))
	f.Add(batch.Builder{BaseOffset: 4, LeaderEpoch: 1, Control: true}.Encode(nil, []batch.Record{
		controlRecord(&metadata.VotersRecord{Voters: []metadata.VotersRecordVoter{{VoterId: 1}, {VoterId: 1}}})}))
	f.Add(batch.Builder{BaseOffset: 0, LeaderEpoch: 1}.Encode(nil, []batch.Record{{Value: []byte{1, 2, 3}}}))
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		var h controlHistory
		err := h.applyBatches(data)
		if err != nil && !errors.Is(err, ErrBadControlRecord) {
			t.Fatalf("unexpected error %v", err)
		}
		for _, e := range h.voters {
			seen := map[int32]bool{}
			for _, v := range e.set {
				if seen[v.ID] {
					t.Fatalf("voter %d twice in %+v", v.ID, e.set)
				}
				seen[v.ID] = true
			}
		}
	})
}
