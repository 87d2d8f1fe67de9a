package quorum

import (
	"reflect"
	"testing"

	"github.com/kraftd/kraftd/storage/batch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestVotersValueRoundTrip(t *testing.T) {
	in := []VoterRecord{
		{ID: 1, DirectoryID: [16]byte{1}, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "a", Port: 9093}}, MinKRaft: 0, MaxKRaft: 1},
		{ID: 2, Endpoints: nil, MinKRaft: 0, MaxKRaft: 1},
	}
	out, err := parseVotersValue(votersValue(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: got %+v want %+v", out, in)
	}
	if _, err := parseVotersValue(votersValue(in)[:5]); err == nil {
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
	var lc kmsg.LeaderChangeMessage
	if err := lc.ReadFrom(b.Records[0].Value); err != nil || lc.Version != 0 || lc.LeaderID != 1 || len(lc.Voters) != 3 || len(lc.GrantingVoters) != 2 {
		t.Fatalf("LeaderChange %+v, %v", lc, err)
	}
	// KRaftVersionRecord v0: int16 version, int16 level, empty tags.
	if got := b.Records[1].Value; !reflect.DeepEqual(got, []byte{0, 0, 0, 1, 0}) {
		t.Fatalf("KRaftVersion value %x", got)
	}
}
