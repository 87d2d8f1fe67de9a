package metadata

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kraftd/kraftd/storage/batch"
)

// Apache-written files captured by compat (see compat/testdata/FILES.txt):
// kraftd must decode them and, given the same timestamps, write the very
// same bytes.
func TestSnapshotFilesMatchApacheBytes(t *testing.T) {
	dirs, _ := filepath.Glob("../compat/testdata/apache-*")
	if len(dirs) == 0 {
		t.Fatal("no Apache golden files under compat/testdata")
	}
	for _, dir := range dirs {
		for _, name := range []string{"bootstrap.checkpoint", "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"} {
			raw, err := os.ReadFile(filepath.Join(dir, name))
			if os.IsNotExist(err) && name == "bootstrap.checkpoint" {
				continue // Apache 4.4 keeps the bootstrap records in the bootstrap snapshot
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := DecodeSnapshotFile(raw)
			if err != nil {
				t.Fatalf("%s/%s: %v", dir, name, err)
			}
			h, _ := batch.ReadHeader(raw)
			again := EncodeSnapshotFile(f, h.BaseTimestamp)
			if !bytes.Equal(maskTimes(t, again), maskTimes(t, raw)) {
				t.Errorf("%s/%s: re-encoded bytes differ\n got % x\nwant % x", dir, name, again, raw)
			}
			t.Logf("%s/%s: epoch %d, %d extra control records, %d records", dir, name, f.Epoch, len(f.Extra), len(f.Records))
			for _, r := range f.Records {
				t.Logf("  %T %+v", r, r)
			}
		}
	}
}

// maskTimes zeroes each batch's CRC and timestamps: Apache stamps every batch
// with the clock at its creation, so only those bytes may differ.
func maskTimes(t *testing.T, b []byte) []byte {
	b = bytes.Clone(b)
	n, err := batch.Walk(b, func(h batch.Header, raw []byte) error {
		clear(raw[17:21])
		clear(raw[27:43])
		return nil
	})
	if err != nil || n != len(b) {
		t.Fatalf("walk: %d of %d, %v", n, len(b), err)
	}
	return b
}

// FuzzDecodeSnapshotFile covers the snapshot and bootstrap file readers:
// both the whole-file decoder and the streaming one.
func FuzzDecodeSnapshotFile(f *testing.F) {
	for _, name := range []string{"bootstrap.checkpoint", "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"} {
		if raw, err := os.ReadFile(filepath.Join("../compat/testdata/apache-4.1.2", name)); err == nil {
			f.Add(raw)
		}
	}
	f.Add(EncodeSnapshotFile(SnapshotFile{Records: []Record{&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27}}}, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		whole, errWhole := DecodeSnapshotFile(b)
		_, _, errStream := LoadSnapshot(bytes.NewReader(b))
		if errWhole == nil && errStream == nil && whole.Records == nil && len(b) > 1<<20 {
			t.Fatal("a large file decoded to nothing")
		}
	})
}
