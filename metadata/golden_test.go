package metadata

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// Golden encodings worked out by hand from the schemas, byte by byte, so the
// generator is checked against something it did not produce itself.
//
// Reminders: every record is flexible, so a string is a uvarint of
// (length+1) then the bytes, an array is a uvarint of (count+1) then the
// elements, and every struct ends with a tag section: a uvarint count, then
// per field uvarint tag, uvarint size, content. Integers are big-endian.
func TestGoldenValues(t *testing.T) {
	cases := []struct {
		name string
		rec  Record
		hex  string
	}{
		{
			// The first record of every bootstrap file and snapshot.
			// 01 frame version, 0c apiKey 12, 00 version 0;
			// 11 = len("metadata.version")+1 = 17, then the 16 name bytes;
			// 001b FeatureLevel 27 (4.1-IV1); 00 no tagged fields.
			name: "FeatureLevelRecord metadata.version=27",
			rec:  &FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27},
			hex:  "010c00" + "11" + hex.EncodeToString([]byte("metadata.version")) + "001b" + "00",
		},
		{
			// 01 02 00 frame for TopicRecord v0; 04 "foo" (3+1);
			// TopicId 0x01..0x10; 00 no tagged fields.
			name: "TopicRecord foo",
			rec:  &TopicRecord{Name: "foo", TopicId: Uuid{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
			hex:  "010200" + "04666f6f" + "0102030405060708090a0b0c0d0e0f10" + "00",
		},
		{
			// 01 05 00 frame; PartitionId 7; TopicId zero. All other fields
			// are tagged; Leader (-2 by default) and Isr (null by default)
			// differ, so 02 tagged fields in tag order:
			// tag 00 Isr, size 09 = array length 03 (2+1) + 2*4 bytes;
			// tag 01 Leader, size 04, 3.
			name: "PartitionChangeRecord leader and ISR",
			rec:  &PartitionChangeRecord{PartitionId: 7, Leader: 3, Isr: []int32{1, 3}, LeaderRecoveryState: -1},
			hex: "010500" + "00000007" + strings.Repeat("00", 16) +
				"02" + "0009" + "03" + "00000001" + "00000003" + "0104" + "00000003",
		},
		{
			// BrokerRegistrationChangeRecord v1 unfencing broker 1 at epoch 5:
			// 01 11 01 frame (key 17, version 1); BrokerId 1; BrokerEpoch 5;
			// 01 tagged field: tag 00 Fenced, size 01, ff (-1 = unfence).
			// InControlledShutdown (tag 1) is 0, its default, so absent.
			name: "BrokerRegistrationChangeRecord unfence",
			rec:  &BrokerRegistrationChangeRecord{Version: 1, BrokerId: 1, BrokerEpoch: 5, Fenced: -1},
			hex:  "011101" + "00000001" + "0000000000000005" + "01" + "0001ff",
		},
		{
			// PartitionRecord v0 for partition 0 on brokers [1]: frame 01 03 00;
			// PartitionId 0; TopicId zero; Replicas 02 [1]; Isr 02 [1];
			// Removing 01 []; Adding 01 []; Leader 1; LeaderEpoch 0;
			// PartitionEpoch 0; LeaderRecoveryState 0 is its default (tag 0),
			// so 00 tagged fields.
			name: "PartitionRecord v0",
			rec:  &PartitionRecord{Replicas: []int32{1}, Isr: []int32{1}, Leader: 1},
			hex: "010300" + "00000000" + strings.Repeat("00", 16) + "0200000001" + "0200000001" + "01" + "01" +
				"00000001" + "00000000" + "00000000" + "00",
		},
		{
			// ConfigRecord deleting a key: Value null is a compact length 00.
			// ResourceType 02 (topic); "t" = 02 74; "x" = 02 78; 00; 00 tags.
			name: "ConfigRecord delete",
			rec:  &ConfigRecord{ResourceType: 2, ResourceName: "t", Name: "x"},
			hex:  "010400" + "02" + "0274" + "0278" + "00" + "00",
		},
		{
			// BeginTransactionRecord with a name: no plain fields; 01 tagged
			// field: tag 00, size 03 (the compact string 03 "ab"), 03 6162.
			name: "BeginTransactionRecord named",
			rec:  &BeginTransactionRecord{Name: ptr("ab")},
			hex:  "011700" + "01" + "0003036162",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := EncodeValue(c.rec)
			if hex.EncodeToString(got) != c.hex {
				t.Fatalf("encode\n got %x\nwant %s", got, c.hex)
			}
			dec, err := DecodeValue(got)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(dec, c.rec) {
				t.Fatalf("decode\n got %+v\nwant %+v", dec, c.rec)
			}
		})
	}
}

// TestGoldenControl checks control record keys and values by hand.
func TestGoldenControl(t *testing.T) {
	cases := []struct {
		name     string
		v        ControlValue
		key, val string
	}{
		{
			// Key: version 0000, type 0003. Value: ValueVersion 0000,
			// LastContainedLogTimestamp 0 (as in a bootstrap file), 00 tags.
			name: "SnapshotHeaderRecord",
			v:    &SnapshotHeaderRecord{},
			key:  "00000003",
			val:  "0000" + "0000000000000000" + "00",
		},
		{
			name: "SnapshotFooterRecord",
			v:    &SnapshotFooterRecord{},
			key:  "00000004",
			val:  "0000" + "00",
		},
		{
			// Leader 1 of voters [1, 2], granted by [1], at v0 (no directory
			// ids): ValueVersion 0000; LeaderId 1; Voters 03 then each voter
			// as VoterId + 00 tags; GrantingVoters 02 likewise; 00 tags.
			name: "LeaderChangeMessage v0",
			v: &LeaderChangeMessage{LeaderId: 1,
				Voters:         []LeaderChangeMessageVoter{{VoterId: 1}, {VoterId: 2}},
				GrantingVoters: []LeaderChangeMessageVoter{{VoterId: 1}}},
			key: "00000002",
			val: "0000" + "00000001" + "03" + "0000000100" + "0000000200" + "02" + "0000000100" + "00",
		},
		{
			// kraft.version 1.
			name: "KRaftVersionRecord",
			v:    &KRaftVersionRecord{KRaftVersion: 1},
			key:  "00000005",
			val:  "0000" + "0001" + "00",
		},
		{
			// One voter, id 1, directory id 0x11 repeated, one endpoint
			// CONTROLLER on h:9093 (0x2385), kraft.version 0-1:
			// ValueVersion; Voters 02; VoterId; directory id; Endpoints 02,
			// "CONTROLLER" 0b..., "h" 0268, port 2385, 00 tags;
			// KRaftVersionFeature 0000 0001 00 tags; voter 00 tags; 00 tags.
			name: "VotersRecord",
			v: &VotersRecord{Voters: []VotersRecordVoter{{
				VoterId:             1,
				VoterDirectoryId:    Uuid{0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11},
				Endpoints:           []VotersRecordEndpoint{{Name: "CONTROLLER", Host: "h", Port: 9093}},
				KRaftVersionFeature: VotersRecordKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1},
			}}},
			key: "00000006",
			val: "0000" + "02" + "00000001" + strings.Repeat("11", 16) +
				"02" + "0b" + hex.EncodeToString([]byte("CONTROLLER")) + "0268" + "2385" + "00" +
				"0000" + "0001" + "00" + "00" + "00",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key, val := EncodeControl(c.v)
			if hex.EncodeToString(key) != c.key || hex.EncodeToString(val) != c.val {
				t.Fatalf("encode\n got %x %x\nwant %s %s", key, val, c.key, c.val)
			}
			dec, err := DecodeControl(key, val)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(dec, c.v) {
				t.Fatalf("decode\n got %+v\nwant %+v", dec, c.v)
			}
		})
	}
}

func TestControlRoundTripAllVersions(t *testing.T) {
	for _, typ := range ControlTypes() {
		for version := int16(0); version <= NewControl(typ).MaxVersion(); version++ {
			v := NewControl(typ)
			fill(v, int(typ))
			v.SetVersion(version)
			enc := v.AppendTo(nil)
			dec := NewControl(typ)
			dec.SetVersion(version)
			if err := dec.ReadFrom(enc); err != nil {
				t.Fatalf("%s v%d: %v", ControlName(typ), version, err)
			}
			if !bytes.Equal(dec.AppendTo(nil), enc) {
				t.Fatalf("%s v%d: re-encode differs", ControlName(typ), version)
			}
			if version == v.MaxVersion() && !reflect.DeepEqual(dec, v) {
				t.Fatalf("%s v%d: decoded %+v, want %+v", ControlName(typ), version, dec, v)
			}
			for n := range len(enc) {
				if err := dec.ReadFrom(enc[:n]); err == nil || !strings.Contains(err.Error(), ControlName(typ)+" v") {
					t.Fatalf("%s v%d cut to %d: %v", ControlName(typ), version, n, err)
				}
			}
		}
	}
}

func TestControlKey(t *testing.T) {
	if _, err := DecodeControl([]byte{0, 0, 0}, nil); err == nil {
		t.Error("short key accepted")
	}
	if _, err := DecodeControl([]byte{0xff, 0xff, 0, 3}, nil); err == nil {
		t.Error("negative key version accepted")
	}
	for _, typ := range []byte{0, 1, 7} {
		if _, err := DecodeControl([]byte{0, 0, 0, typ}, []byte{0, 0, 0}); err == nil {
			t.Errorf("type %d accepted", typ)
		}
	}
	// Apache reads key versions above 0 as version 0, and ignores bytes
	// after a control value (it reads values at schema version 0 only).
	v, err := DecodeControl([]byte{0, 1, 0, 4, 9}, []byte{0, 0, 0, 0xee})
	if err != nil || v.ControlType() != SnapshotFooterType {
		t.Fatalf("got %v, %v", v, err)
	}
}

func ptr[T any](v T) *T { return &v }
