package batch

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// scanAll describes every record Scan hands out, and how the scan ends.
func scanAll(s *Scanner, raw []byte) string {
	var out bytes.Buffer
	_, err := s.Scan(raw, func(r Record) error {
		fmt.Fprintf(&out, "%d %d %q/%v %q/%v %v\n", r.OffsetDelta, r.TimestampDelta, r.Key, r.Key == nil, r.Value, r.Value == nil, r.Headers)
		return nil
	})
	if err != nil {
		fmt.Fprintf(&out, "error: %v", err)
	}
	return out.String()
}

// TestScanPlainAndGzipAgree: a batch hands out the same records plain and
// gzipped, through one reused Scanner, as Decode keeps them.
func TestScanPlainAndGzipAgree(t *testing.T) {
	records := []Record{
		{Value: bytes.Repeat([]byte("v"), 3000)}, // past the first buffer size
		{Key: []byte("k"), Value: nil},
		{Key: []byte{}, Value: []byte{}, Headers: []RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "", Value: nil}}},
	}
	var s Scanner
	var c Compressor
	b := Builder{BaseOffset: 5, LeaderEpoch: 2, Timestamp: 9}
	plain, gz := b.Encode(nil, records), c.Encode(nil, b, records)
	want := scanAll(&s, plain)
	for range 2 {
		if got := scanAll(&s, gz); got != want {
			t.Fatalf("gzip:\n%s\nplain:\n%s", got, want)
		}
		if got := scanAll(&s, plain); got != want {
			t.Fatalf("plain again:\n%s\nfirst:\n%s", got, want)
		}
	}
	d, err := Decode(gz)
	if err != nil || len(d.Records) != len(records) || !bytes.Equal(d.Records[0].Value, records[0].Value) || d.Records[2].Headers[0].Key != "h" {
		t.Fatalf("Decode: %+v, %v", d.Records, err)
	}
}

// TestScanAllOrNothing: fn sees no record of a batch that does not decode
// whole, plain or gzipped, and an error from fn comes back as it is.
func TestScanAllOrNothing(t *testing.T) {
	var c Compressor
	good := []Record{{Value: []byte("a")}, {Value: []byte("b")}}
	b := Builder{BaseOffset: 1}
	for name, raw := range map[string][]byte{
		"plain count past the records": setCount(b.Encode(nil, good), 3),
		"gzip count past the records":  setCount(c.Encode(nil, b, good), 3),
		"plain trailing record":        setCount(b.Encode(nil, good), 1),
		"gzip trailing record":         setCount(c.Encode(nil, b, good), 1),
	} {
		calls := 0
		_, err := Scan(raw, func(Record) error { calls++; return nil })
		if !errors.Is(err, ErrCorrupt) || calls != 0 {
			t.Errorf("%s: %d calls, %v", name, calls, err)
		}
	}
	stop := errors.New("stop")
	for _, raw := range [][]byte{b.Encode(nil, good), c.Encode(nil, b, good)} {
		if _, err := Scan(raw, func(Record) error { return stop }); err != stop {
			t.Errorf("fn's error came back as %v", err)
		}
	}
}

// setCount rewrites a batch's record count and its CRC.
func setCount(raw []byte, n int) []byte {
	raw = bytes.Clone(raw)
	raw[offRecordCount], raw[offRecordCount+1], raw[offRecordCount+2], raw[offRecordCount+3] = 0, 0, byte(n>>8), byte(n)
	return finishBatch(raw, 0)
}

// TestScanMemoryIsConstant: scanning a gzipped batch of 200,000 tiny
// records allocates a small constant, not per record (issue 34, defect
// 6: Decode held about 100 bytes a record, and the inflated batch).
func TestScanMemoryIsConstant(t *testing.T) {
	const n = 200_000
	recs := make([]Record, n)
	for i := range recs {
		recs[i].Value = []byte{1, 23, 0, 0}
	}
	var c Compressor
	raw := c.Encode(nil, Builder{}, recs)
	recs = nil
	var s Scanner
	count := 0
	if _, err := s.Scan(raw, func(Record) error { count++; return nil }); err != nil || count != n {
		t.Fatalf("first scan: %d records, %v", count, err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := s.Scan(raw, func(Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("a reused Scanner allocated %d bytes for %d records of a %d-byte batch", got, n, len(raw))
	}
}
