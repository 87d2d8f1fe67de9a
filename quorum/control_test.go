package quorum

import (
	"reflect"
	"testing"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

// decodeVoters reads a VotersRecord value back into VoterRecords.
func decodeVoters(t *testing.T, key, value []byte) []VoterRecord {
	t.Helper()
	v, err := metadata.DecodeControl(key, value)
	if err != nil {
		t.Fatal(err)
	}
	var out []VoterRecord
	for _, rv := range v.(*metadata.VotersRecord).Voters {
		vr := VoterRecord{ID: rv.VoterId, DirectoryID: rv.VoterDirectoryId,
			MinKRaft: rv.KRaftVersionFeature.MinSupportedVersion, MaxKRaft: rv.KRaftVersionFeature.MaxSupportedVersion}
		for _, e := range rv.Endpoints {
			vr.Endpoints = append(vr.Endpoints, Endpoint{Name: e.Name, Host: e.Host, Port: e.Port})
		}
		out = append(out, vr)
	}
	return out
}

func TestVotersRecordRoundTrip(t *testing.T) {
	in := []VoterRecord{
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

func TestStartOfEpochBatch(t *testing.T) {
	raw := startOfEpochBatch(7, 3, 1000, 1, []int32{1, 2, 3}, []int32{1, 2}, 1, []VoterRecord{{ID: 1}})
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
	if got := decodeVoters(t, b.Records[2].Key, b.Records[2].Value); !reflect.DeepEqual(got, []VoterRecord{{ID: 1}}) {
		t.Fatalf("Voters %+v", got)
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
