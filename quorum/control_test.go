package quorum

import (
	"errors"
	"reflect"
	"testing"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

// decodeVoters reads a VotersRecord value back into a voter set.
func decodeVoters(t *testing.T, key, value []byte) VoterSet {
	t.Helper()
	v, err := metadata.DecodeControl(key, value)
	if err != nil {
		t.Fatal(err)
	}
	set, err := voterSetFromRecord(v.(*metadata.VotersRecord))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestVotersRecordRoundTrip(t *testing.T) {
	in := VoterSet{
		{ID: 1, DirectoryID: [16]byte{1}, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "a", Port: 9093}}, MinKRaft: 0, MaxKRaft: 1},
		{ID: 2, Endpoints: nil, MinKRaft: 0, MaxKRaft: 1},
	}
	key, value := metadata.EncodeControl(votersRecord(in))
	if out := decodeVoters(t, key, value); !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: got %+v want %+v", out, in)
	}
	if _, err := metadata.DecodeControl(key, value[:5]); err == nil {
		t.Fatal("short value decoded")
	}
}

// A VotersRecord naming an id twice, or nobody, is refused.
func TestVotersRecordRefusesDuplicates(t *testing.T) {
	for _, r := range []*metadata.VotersRecord{
		{Voters: []metadata.VotersRecordVoter{{VoterId: 1}, {VoterId: 1, VoterDirectoryId: [16]byte{1}}}},
		{},
	} {
		if _, err := voterSetFromRecord(r); !errors.Is(err, ErrBadControlRecord) {
			t.Errorf("%+v: err %v, want ErrBadControlRecord", r, err)
		}
	}
}

// startOfEpochNode is a node of voter set at kraft.version kraft, whose
// newest VotersRecord is at offset (none when offset < -1), about to lead
// epoch 3 from log end 7.
func startOfEpochNode(set VoterSet, kraft int16, offset int64) *Node {
	n := &Node{id: 1, epoch: 3, endOffset: 7, now: 1000,
		cfg: Config{DirectoryID: [16]byte{0xd1}, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "a", Port: 9093}}}}
	n.control.kraft = []kraftAt{{offset: -1, version: kraft}}
	if offset >= -1 {
		n.control.voters = []votersAt{{offset: offset, set: set}}
	} else {
		n.control.static = set
	}
	n.voterSet, n.voters = set, set.IDs()
	return n
}

func TestStartOfEpochBatch(t *testing.T) {
	// The set from the bootstrap snapshot (offset -1), which names no
	// directory for the leader: the first leader writes the set, with its
	// own directory, listeners and kraft.version range.
	n := startOfEpochNode(VoterSet{{ID: 1}, {ID: 2}, {ID: 3}}, 1, -1)
	raw := n.startOfEpochBatch([]int32{1, 2})
	b, err := batch.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !b.IsControl() || b.BaseOffset != 7 || b.PartitionLeaderEpoch != 3 || len(b.Records) != 3 {
		t.Fatalf("unexpected batch %+v", b.Header)
	}
	types := []int16{ControlType(b.Records[0].Key), ControlType(b.Records[1].Key), ControlType(b.Records[2].Key)}
	if !reflect.DeepEqual(types, []int16{2, 5, 6}) {
		t.Fatalf("control types %v", types)
	}
	v, err := metadata.DecodeControl(b.Records[0].Key, b.Records[0].Value)
	if lc, ok := v.(*metadata.LeaderChangeMessage); err != nil || !ok || lc.ValueVersion != 0 || lc.LeaderId != 1 || len(lc.Voters) != 3 || len(lc.GrantingVoters) != 2 {
		t.Fatalf("LeaderChange %+v, %v", v, err)
	}
	// The bytes Apache writes. LeaderChangeMessage v0: int16 version,
	// int32 leader, two compact arrays of {int32 id, no tags}, no tags.
	// KRaftVersionRecord v0: int16 version, int16 level, no tags.
	if got := b.Records[0].Value; !reflect.DeepEqual(got, []byte{0, 0, 0, 0, 0, 1, 4, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0}) {
		t.Fatalf("LeaderChange value %x", got)
	}
	if got := b.Records[1].Value; !reflect.DeepEqual(got, []byte{0, 0, 0, 1, 0}) {
		t.Fatalf("KRaftVersion value %x", got)
	}
	if got := b.Records[2].Key; !reflect.DeepEqual(got, []byte{0, 0, 0, 6}) {
		t.Fatalf("Voters key %x", got)
	}
	want := VoterSet{{ID: 1, DirectoryID: [16]byte{0xd1}, Endpoints: n.cfg.Endpoints, MaxKRaft: 1}, {ID: 2}, {ID: 3}}
	if got := decodeVoters(t, b.Records[2].Key, b.Records[2].Value); !reflect.DeepEqual(got, want) {
		t.Fatalf("Voters %+v, want %+v", got, want)
	}
}

// After the first VotersRecord, a leader writes the set again only when
// it names the leader otherwise than it is, as Apache's LeaderState does;
// a zero directory id written by an older kraftd is repaired so.
func TestStartOfEpochBatchWritesVotersOnlyWhenNeeded(t *testing.T) {
	self := Voter{ID: 1, DirectoryID: [16]byte{0xd1}, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "a", Port: 9093}}, MaxKRaft: 1}
	zeroDir := self
	zeroDir.DirectoryID = [16]byte{}
	otherPort := self
	otherPort.Endpoints = []Endpoint{{Name: "CONTROLLER", Host: "a", Port: 9094}}
	for _, tc := range []struct {
		name    string
		set     VoterSet
		kraft   int16
		offset  int64
		records int
	}{
		{"up to date", VoterSet{self}, 1, 2, 1},
		{"zero directory id", VoterSet{zeroDir}, 1, 2, 3},
		{"other listeners", VoterSet{otherPort}, 1, 2, 3},
		{"static quorum", VoterSet{{ID: 1}}, 0, -2, 1},
	} {
		n := startOfEpochNode(tc.set, tc.kraft, tc.offset)
		b, err := batch.Decode(n.startOfEpochBatch([]int32{1}))
		if err != nil || len(b.Records) != tc.records {
			t.Errorf("%s: %d records, %v; want %d", tc.name, len(b.Records), err, tc.records)
			continue
		}
		if tc.records == 3 {
			if got := decodeVoters(t, b.Records[2].Key, b.Records[2].Value); !reflect.DeepEqual(got, VoterSet{self}) {
				t.Errorf("%s: wrote %+v, want %+v", tc.name, got, VoterSet{self})
			}
		}
	}
}
func TestControlType(t *testing.T) {
	for _, tc := range []struct {
		key  []byte
		want int16
	}{
		{[]byte{0, 0, 0, 2}, 2},
		{[]byte{0, 0, 0}, -1},
		{[]byte{0x80, 0, 0, 2}, -1},
		{nil, -1},
	} {
		if got := ControlType(tc.key); got != tc.want {
			t.Errorf("ControlType(%x) = %d, want %d", tc.key, got, tc.want)
		}
	}
}
