package batch

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestGzipBatchRoundTrip(t *testing.T) {
	var c Compressor
	records := []Record{{Value: bytes.Repeat([]byte("partition"), 40)}, {Key: []byte("k"), Value: []byte("v")}, {Value: nil}}
	b := Builder{BaseOffset: 7, LeaderEpoch: 3, Timestamp: 11}
	for range 2 { // the second time on reused buffers
		raw := c.Encode(nil, b, records)
		plain := b.Encode(nil, records)
		if len(raw) >= len(plain) {
			t.Errorf("gzipped batch %d bytes, plain %d", len(raw), len(plain))
		}
		got, err := Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got.Codec() != "gzip" || got.RecordCount != 3 || got.LastOffsetDelta != 2 || got.BaseOffset != 7 {
			t.Fatalf("header %+v", got.Header)
		}
		want, _ := Decode(plain)
		for i := range records {
			g, w := got.Records[i], want.Records[i]
			if !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) || g.OffsetDelta != w.OffsetDelta {
				t.Errorf("record %d: %+v, want %+v", i, g, w)
			}
		}
	}
}

// TestEncodeSectionIsEncode: a batch built from a records section the
// caller encoded with AppendRecord has the bytes of the batch Encode
// builds from the records, plain and gzipped.
func TestEncodeSectionIsEncode(t *testing.T) {
	records := []Record{{Value: bytes.Repeat([]byte("partition"), 40)}, {Key: []byte("k"), Value: []byte("v")}, {Value: nil}}
	var section []byte
	for i, r := range records {
		r.OffsetDelta = int32(i)
		section = AppendRecord(section, r)
	}
	b := Builder{BaseOffset: 7, LeaderEpoch: 3, Timestamp: 11}
	if got, want := b.EncodeSection([]byte("prefix"), section, len(records)), b.Encode([]byte("prefix"), records); !bytes.Equal(got, want) {
		t.Errorf("plain: % x\nwant % x", got, want)
	}
	var c, d Compressor
	if got, want := c.EncodeSection(nil, b, section, len(records)), d.Encode(nil, b, records); !bytes.Equal(got, want) {
		t.Errorf("gzipped: % x\nwant % x", got, want)
	}
}

// TestGzipBatchBounds: a batch that inflates past maxInflated, or whose
// gzip stream is damaged under a valid CRC, is corrupt, not decoded.
func TestGzipBatchBounds(t *testing.T) {
	var c Compressor
	huge := c.Encode(nil, Builder{}, []Record{{Value: make([]byte, maxInflated)}})
	if _, err := Decode(huge); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "inflates past") {
		t.Fatalf("batch inflating to %d bytes: %v", maxInflated, err)
	}
	raw := c.Encode(nil, Builder{}, []Record{{Value: []byte("value")}})
	bad := bytes.Clone(raw[:len(raw)-3]) // cut the gzip trailer
	bad = finishBatch(bad, 0)
	if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("gzip stream cut short: %v", err)
	}
	other := Builder{}.Encode(nil, []Record{{Value: []byte("v")}})
	other[offAttributes+1] |= 4 // zstd
	other = finishBatch(other, 0)
	if _, err := Decode(other); !errors.Is(err, ErrCompressed) {
		t.Fatalf("zstd batch: %v", err)
	}
}
