package metadata

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestRecordRoundTrip encodes a fully populated record at every version of
// every record, decodes it and encodes again: the bytes must match, and the
// decoded record must hold exactly the fields the version carries.
func TestRecordRoundTrip(t *testing.T) {
	for _, key := range RecordKeys() {
		proto := NewRecord(key)
		for version := int16(0); version <= proto.MaxVersion(); version++ {
			name := RecordName(key)
			t.Run(name+"/v"+itoa(int(version)), func(t *testing.T) {
				rec := NewRecord(key)
				fill(rec, int(key))
				rec.SetVersion(version)
				enc := EncodeValue(rec)
				dec, err := DecodeValue(enc)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if again := EncodeValue(dec); !bytes.Equal(again, enc) {
					t.Fatalf("re-encode differs:\n got %x\nwant %x", again, enc)
				}
				if version == rec.MaxVersion() && !reflect.DeepEqual(dec, rec) {
					t.Fatalf("at the newest version every field must survive:\n got %+v\nwant %+v", dec, rec)
				}
				checkFieldPresence(t, rec, dec)
			})
		}
	}
}

// checkFieldPresence relates encoder and decoder field by field: a field is
// written at this version exactly when zeroing it changes the encoding, and
// then it must decode to the value that was set; otherwise it must decode as
// its default, as Apache's decoder does.
func checkFieldPresence(t *testing.T, rec, dec Record) {
	t.Helper()
	enc := rec.AppendTo(nil)
	rv, dv := reflect.ValueOf(rec).Elem(), reflect.ValueOf(dec).Elem()
	defaults := reflect.ValueOf(NewRecord(rec.Key())).Elem()
	for i := 0; i < rv.NumField(); i++ {
		name := rv.Type().Field(i).Name
		if name == "Version" || name == "UnknownTags" {
			continue
		}
		written := !bytes.Equal(perturbField(rec, i).(Record).AppendTo(nil), enc)
		got := dv.Field(i).Interface()
		switch {
		case written && !reflect.DeepEqual(got, rv.Field(i).Interface()):
			t.Errorf("field %s is written but decodes as %v", name, got)
		case !written && !reflect.DeepEqual(got, defaults.Field(i).Interface()):
			t.Errorf("field %s is not written at v%d but decodes as %v, not its default", name, rec.GetVersion(), got)
		}
	}
}

// TestFieldsByVersion pins, for a few records, which fields exist at which
// version, as the schemas say; checkFieldPresence alone could not tell a
// field missing from both encoder and decoder.
func TestFieldsByVersion(t *testing.T) {
	cases := []struct {
		rec     Record
		version int16
		absent  []string
	}{
		{&RegisterBrokerRecord{}, 0, []string{"IsMigratingZkBroker", "InControlledShutdown", "LogDirs", "CordonedLogDirs"}},
		{&RegisterBrokerRecord{}, 1, []string{"IsMigratingZkBroker", "LogDirs", "CordonedLogDirs"}},
		{&RegisterBrokerRecord{}, 3, []string{"CordonedLogDirs"}},
		{&RegisterBrokerRecord{}, 4, nil},
		{&PartitionRecord{}, 0, []string{"Directories", "EligibleLeaderReplicas", "LastKnownElr"}},
		{&PartitionRecord{}, 1, []string{"EligibleLeaderReplicas", "LastKnownElr"}},
		{&PartitionChangeRecord{}, 1, []string{"EligibleLeaderReplicas", "LastKnownElr"}},
		{&BrokerRegistrationChangeRecord{}, 0, []string{"InControlledShutdown", "LogDirs", "CordonedLogDirs"}},
		{&BrokerRegistrationChangeRecord{}, 2, []string{"CordonedLogDirs"}},
	}
	for _, c := range cases {
		fill(c.rec, 1)
		c.rec.SetVersion(c.version)
		dec, err := DecodeValue(EncodeValue(c.rec))
		if err != nil {
			t.Fatal(err)
		}
		dv := reflect.ValueOf(dec).Elem()
		defaults := reflect.ValueOf(NewRecord(c.rec.Key())).Elem()
		for i := 0; i < dv.NumField(); i++ {
			name := dv.Type().Field(i).Name
			if name == "Version" || name == "UnknownTags" {
				continue
			}
			wantAbsent := false
			for _, a := range c.absent {
				wantAbsent = wantAbsent || a == name
			}
			want := reflect.ValueOf(c.rec).Elem().Field(i)
			if wantAbsent {
				want = defaults.Field(i)
			}
			if got := dv.Field(i).Interface(); !reflect.DeepEqual(got, want.Interface()) {
				t.Errorf("%s v%d field %s (absent: %v) = %v, want %v", RecordName(c.rec.Key()), c.version, name, wantAbsent, got, want)
			}
		}
	}
}

// TestUnknownTagsSurvive adds tagged fields this package does not know to
// every record at every version and checks they come back unchanged.
func TestUnknownTagsSurvive(t *testing.T) {
	for _, key := range RecordKeys() {
		for version := int16(0); version <= NewRecord(key).MaxVersion(); version++ {
			rec := NewRecord(key)
			fill(rec, 3)
			rec.SetVersion(version)
			unknown := Tags{{Tag: 90, Data: []byte{1, 2, 3}}, {Tag: 1 << 20, Data: []byte{}}}
			reflect.ValueOf(rec).Elem().FieldByName("UnknownTags").Set(reflect.ValueOf(unknown))
			enc := EncodeValue(rec)
			dec, err := DecodeValue(enc)
			if err != nil {
				t.Fatalf("%s v%d: %v", RecordName(key), version, err)
			}
			got := reflect.ValueOf(dec).Elem().FieldByName("UnknownTags").Interface().(Tags)
			if !reflect.DeepEqual(got, unknown) {
				t.Errorf("%s v%d: unknown tags %v, want %v", RecordName(key), version, got, unknown)
			}
			if again := EncodeValue(dec); !bytes.Equal(again, enc) {
				t.Errorf("%s v%d: re-encode differs", RecordName(key), version)
			}
		}
	}
}

// TestUnknownTagsInterleave checks unknown fields are written in tag order
// among the known ones, as Apache does: PartitionChangeRecord v1 knows tags
// 0-5 and 8, so tags 6 and 7 (ELR fields from v2) are unknown there and must
// sit between Leader... and Directories.
func TestUnknownTagsInterleave(t *testing.T) {
	rec := &PartitionChangeRecord{
		Version:             1,
		Leader:              1,
		LeaderRecoveryState: -1,
		Directories:         []Uuid{{}},
		UnknownTags:         Tags{{Tag: 6, Data: []byte{0xaa}}, {Tag: 7, Data: []byte{0xbb}}},
	}
	want := concat(
		[]byte{0x01, 0x05, 0x01},       // frame 1, key 5, version 1
		[]byte{0, 0, 0, 0},             // PartitionId 0
		make([]byte, 16),               // TopicId
		[]byte{0x04},                   // four tagged fields
		[]byte{0x01, 0x04, 0, 0, 0, 1}, // tag 1 Leader, 4 bytes, 1
		[]byte{0x06, 0x01, 0xaa},       // unknown tag 6
		[]byte{0x07, 0x01, 0xbb},       // unknown tag 7
		[]byte{0x08, 0x11, 0x02},       // tag 8 Directories, 17 bytes: one element
		make([]byte, 16),
	)
	got := EncodeValue(rec)
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
	dec, err := DecodeValue(got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dec, rec) {
		t.Fatalf("decoded %+v, want %+v", dec, rec)
	}
}

// TestKnownTagAtOlderVersionIsUnknown: a tag that only means something at a
// newer version is kept as unknown data at an older one, not decoded.
func TestKnownTagAtOlderVersionIsUnknown(t *testing.T) {
	newer := &RegisterBrokerRecord{Version: 4, CordonedLogDirs: []Uuid{{1}}}
	body := newer.AppendTo(nil)
	older := &RegisterBrokerRecord{Version: 3}
	// v3 and v4 have the same non-tagged layout, so the v4 body reads at v3.
	if err := older.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if older.CordonedLogDirs != nil || len(older.UnknownTags) != 1 || older.UnknownTags[0].Tag != 1 {
		t.Fatalf("got %+v", older)
	}
	if !bytes.Equal(older.AppendTo(nil), body) {
		t.Fatal("re-encode at v3 differs")
	}
}

func TestDefaults(t *testing.T) {
	p := NewPartitionRecord()
	if p.PartitionId != -1 || p.Leader != -1 || p.LeaderEpoch != -1 || p.PartitionEpoch != -1 || p.EligibleLeaderReplicas != nil {
		t.Errorf("PartitionRecord defaults: %+v", p)
	}
	c := NewPartitionChangeRecord()
	if c.Leader != -2 || c.LeaderRecoveryState != -1 || c.Isr != nil {
		t.Errorf("PartitionChangeRecord defaults: %+v", c)
	}
	// A change record left at its defaults writes no tagged fields at all.
	c.Version = 2
	if body := c.AppendTo(nil); len(body) != 4+16+1 || body[len(body)-1] != 0 {
		t.Errorf("default PartitionChangeRecord body %x", body)
	}
	b := NewRegisterBrokerRecord()
	if !b.Fenced || b.Rack == nil || *b.Rack != "" {
		t.Errorf("RegisterBrokerRecord defaults: %+v", b)
	}
	if NewProducerIdsRecord().BrokerEpoch != -1 {
		t.Error("ProducerIdsRecord.BrokerEpoch default")
	}
	for _, key := range []int16{6, 13, 16, 30, -1} {
		if NewRecord(key) != nil || RecordName(key) != "" {
			t.Errorf("key %d should be unknown", key)
		}
	}
	if got := len(RecordKeys()); got != 27 {
		t.Errorf("%d record keys, want 27 (0-29 less 6, 13, 16)", got)
	}
}

func TestDecodeErrorsNameRecordAndField(t *testing.T) {
	rec := &PartitionRecord{Version: 1, Replicas: []int32{1, 2, 3}}
	enc := EncodeValue(rec)
	// Frame (3) + PartitionId (4) + TopicId (16) + Replicas length (1) + one
	// and a half replicas: the input ends inside Replicas.
	_, err := DecodeValue(enc[:3+4+16+1+6])
	const want = "metadata: PartitionRecord v1: field Replicas: not enough data"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	if !errors.Is(err, ErrNotEnoughData) {
		t.Fatal("want errors.Is ErrNotEnoughData")
	}

	// A nested field is named by its path.
	reg := &RegisterBrokerRecord{Version: 0, EndPoints: []RegisterBrokerRecordBrokerEndpoint{{Name: "PLAINTEXT", Host: "localhost"}}}
	enc = EncodeValue(reg)
	_, err = DecodeValue(enc[:3+4+16+8+1+1+10+3])
	if err == nil || !strings.Contains(err.Error(), "RegisterBrokerRecord v0: field EndPoints.Host: not enough data") {
		t.Fatalf("got %v", err)
	}

	// A length prefix far beyond the input fails before allocating.
	huge := concat([]byte{0x01, 0x03, 0x00}, make([]byte, 20), []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	allocs := testing.AllocsPerRun(10, func() { _, err = DecodeValue(huge) })
	if err == nil || !strings.Contains(err.Error(), "field Replicas: not enough data") {
		t.Fatalf("got %v", err)
	}
	if allocs > 10 {
		t.Fatalf("%v allocations decoding a huge length prefix", allocs)
	}

	// Null in a non-nullable field.
	_, err = DecodeValue(concat([]byte{0x01, 0x02, 0x00, 0x00}, make([]byte, 16), []byte{0}))
	if err == nil || err.Error() != "metadata: TopicRecord v0: field Name: null in a non-nullable field" {
		t.Fatalf("got %v", err)
	}

	// A known tagged field whose content is shorter than announced.
	_, err = DecodeValue(concat([]byte{0x01, 0x05, 0x00}, make([]byte, 20), []byte{0x01, 0x01, 0x05, 0, 0, 0, 1, 9}))
	if err == nil || err.Error() != "metadata: PartitionChangeRecord v0: field Leader: tagged field size does not match its content" {
		t.Fatalf("got %v", err)
	}
}

func TestDecodeTruncatedNeverPanics(t *testing.T) {
	for _, key := range RecordKeys() {
		for version := int16(0); version <= NewRecord(key).MaxVersion(); version++ {
			rec := NewRecord(key)
			fill(rec, 5)
			rec.SetVersion(version)
			enc := EncodeValue(rec)
			for n := 0; n < len(enc); n++ {
				_, err := DecodeValue(enc[:n])
				if err == nil {
					t.Fatalf("%s v%d cut to %d bytes decoded", RecordName(key), version, n)
				}
				var de *DecodeError
				if n > 3 && (!errors.As(err, &de) || de.Field == "") {
					t.Fatalf("%s v%d cut to %d: error %v names no field", RecordName(key), version, n, err)
				}
			}
		}
	}
}

func TestValueFrame(t *testing.T) {
	good := EncodeValue(&NoOpRecord{})
	if !bytes.Equal(good, []byte{0x01, 0x14, 0x00, 0x00}) {
		t.Fatalf("NoOpRecord value %x", good)
	}
	cases := []struct {
		in   []byte
		want error
	}{
		{[]byte{0x00, 0x14, 0x00, 0x00}, ErrFrameVersion},
		{[]byte{0x02, 0x14, 0x00, 0x00}, ErrFrameVersion},
		{[]byte{0x01, 0x06, 0x00, 0x00}, ErrUnknownRecord},
		{[]byte{0x01, 0xff, 0xff, 0x03, 0x00, 0x00}, ErrUnknownRecord},
		{[]byte{0x01, 0x14, 0x01, 0x00}, ErrUnsupportedVersion},
		{[]byte{0x01, 0x14, 0xff, 0xff, 0x03, 0x00}, ErrUnsupportedVersion},
		{[]byte{0x01, 0x14, 0x00, 0x00, 0x00}, ErrTrailingBytes},
		{[]byte{0x01, 0x14}, ErrNotEnoughData},
		{[]byte{0x01, 0xff, 0xff, 0xff, 0xff, 0xff}, ErrBadVarint},
	}
	for _, c := range cases {
		if _, err := DecodeValue(c.in); !errors.Is(err, c.want) {
			t.Errorf("%x: got %v, want %v", c.in, err, c.want)
		}
	}
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
