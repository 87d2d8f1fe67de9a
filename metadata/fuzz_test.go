package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeValue feeds arbitrary bytes to DecodeValue. Whatever decodes must
// re-encode to a canonical form that decodes to itself; whatever does not
// must fail with an error, never a panic. The committed corpus under
// testdata/fuzz/FuzzDecodeValue runs in plain `go test`.
func FuzzDecodeValue(f *testing.F) {
	for _, seed := range valueSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := DecodeValue(b)
		if err != nil {
			var de *DecodeError
			if errors.As(err, &de) && de.Record == "" {
				t.Fatalf("decode error names no record: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "metadata: ") {
				t.Fatalf("error without package prefix: %v", err)
			}
			return
		}
		canon := EncodeValue(rec)
		again, err := DecodeValue(canon)
		if err != nil {
			t.Fatalf("re-encoded %x of %x does not decode: %v", canon, b, err)
		}
		if got := EncodeValue(again); !bytes.Equal(got, canon) {
			t.Fatalf("encoding is not stable:\n%x\n%x", canon, got)
		}
	})
}

// FuzzDecodeControl does the same for control record keys and values.
func FuzzDecodeControl(f *testing.F) {
	for _, typ := range ControlTypes() {
		v := NewControl(typ)
		fill(v, 1)
		key, val := EncodeControl(v)
		f.Add(key, val)
	}
	f.Fuzz(func(t *testing.T, key, val []byte) {
		v, err := DecodeControl(key, val)
		if err != nil {
			return
		}
		k2, canon := EncodeControl(v)
		again, err := DecodeControl(k2, canon)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		if _, got := EncodeControl(again); !bytes.Equal(got, canon) {
			t.Fatalf("encoding is not stable:\n%x\n%x", canon, got)
		}
	})
}

// valueSeeds is one populated encoding per record version, plus unknown tags.
func valueSeeds() [][]byte {
	var seeds [][]byte
	for _, key := range RecordKeys() {
		for version := int16(0); version <= NewRecord(key).MaxVersion(); version++ {
			rec := NewRecord(key)
			fill(rec, int(key)+int(version))
			rec.SetVersion(version)
			seeds = append(seeds, EncodeValue(rec))
		}
	}
	withTags := &PartitionChangeRecord{Version: 2, Leader: 1, UnknownTags: Tags{{Tag: 9, Data: []byte{1}}}}
	return append(seeds, EncodeValue(withTags))
}

// TestWriteFuzzCorpus rewrites the committed seed corpus when
// KRAFTD_WRITE_CORPUS=1; otherwise it only checks the corpus exists.
func TestWriteFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeValue")
	if os.Getenv("KRAFTD_WRITE_CORPUS") != "1" {
		if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
			t.Fatalf("no seed corpus in %s; run with KRAFTD_WRITE_CORPUS=1", dir)
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, seed := range valueSeeds() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seed)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%03d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
