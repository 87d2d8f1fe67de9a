package batch

import (
	"bytes"
	"errors"
	"hash/crc32"
	"testing"
)

func TestCastagnoliCheckValue(t *testing.T) {
	// The standard CRC-32C check value; a wrong polynomial fails here.
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xE3069283 {
		t.Fatalf("crc32c check value %08x", got)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	recs := []Record{{Value: []byte("a")}, {Key: []byte{0, 0, 0, 2}, Value: []byte("bb")}, {Value: nil}}
	raw := Builder{BaseOffset: 42, LeaderEpoch: 7, Timestamp: 1700000000000, Control: true}.Encode(nil, recs)
	b, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if b.BaseOffset != 42 || b.PartitionLeaderEpoch != 7 || !b.IsControl() || b.LastOffset() != 44 || b.RecordCount != 3 {
		t.Fatalf("header %+v", b.Header)
	}
	if b.ProducerID != -1 || b.ProducerEpoch != -1 || b.BaseSequence != -1 || b.Size() != len(raw) {
		t.Fatalf("header %+v", b.Header)
	}
	for i, r := range b.Records {
		if r.OffsetDelta != int32(i) || !bytes.Equal(r.Key, recs[i].Key) || !bytes.Equal(r.Value, recs[i].Value) || (r.Value == nil) != (recs[i].Value == nil) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	// Offsets and epochs are outside the CRC: rewriting them keeps the batch valid.
	SetBaseOffset(raw, 100)
	SetLeaderEpoch(raw, 9)
	h, err := Check(raw)
	if err != nil || h.BaseOffset != 100 || h.PartitionLeaderEpoch != 9 {
		t.Fatalf("after rewrite: %+v %v", h, err)
	}
}

func TestCorruptionAndTruncation(t *testing.T) {
	raw := Builder{BaseOffset: 0, LeaderEpoch: 1, Timestamp: 1}.Encode(nil, []Record{{Value: []byte("hello")}})
	for i := 0; i < len(raw); i++ {
		if _, err := Check(raw[:i]); !errors.Is(err, ErrShort) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix %d: %v", i, err)
		}
	}
	for i := offAttributes; i < len(raw); i++ {
		bad := bytes.Clone(raw)
		bad[i] ^= 0x40
		if _, err := Check(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d not caught: %v", i, err)
		}
	}
	two := append(bytes.Clone(raw), raw...)
	n, err := Walk(append(two, raw[:20]...), func(Header, []byte) error { return nil })
	if err != nil || n != 2*len(raw) {
		t.Fatalf("walk consumed %d, %v", n, err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Builder{BaseOffset: 3, LeaderEpoch: 1, Timestamp: 5}.Encode(nil, []Record{{Value: []byte("x")}}))
	f.Add(Builder{Control: true}.Encode(nil, []Record{{Key: []byte{0, 0, 0, 3}, Value: []byte{0, 0, 0}}}))
	f.Add([]byte{})
	var c Compressor
	f.Add(c.Encode(nil, Builder{BaseOffset: 9, LeaderEpoch: 2}, []Record{{Value: []byte("gzipped")}, {Value: []byte("gzipped too")}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(data)
		if err != nil {
			return
		}
		// A batch that decodes re-encodes to the same bytes when it was
		// written the way kraftd writes batches.
		again := Builder{BaseOffset: b.BaseOffset, LeaderEpoch: b.PartitionLeaderEpoch, Timestamp: b.BaseTimestamp, Control: b.IsControl()}.Encode(nil, b.Records)
		if _, err := Decode(again); err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		// Scan hands out the same records from both codecs.
		var c Compressor
		var s Scanner
		gz := c.Encode(nil, Builder{BaseOffset: b.BaseOffset}, b.Records)
		if plain, zipped := scanAll(&s, again), scanAll(&s, gz); plain != zipped {
			t.Fatalf("gzip:\n%s\nplain:\n%s", zipped, plain)
		}
	})
}
