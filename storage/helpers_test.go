package storage

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/storage/batch"
)

const testDir = "/data/" + MetadataLogDirName

// mkBatch encodes a batch of n records with values of valueSize bytes.
func mkBatch(base int64, epoch int32, n, valueSize int, ts int64) []byte {
	recs := make([]batch.Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + (int(base)+i)%26)}, valueSize)
		recs[i] = batch.Record{Value: v}
	}
	return batch.Builder{BaseOffset: base, LeaderEpoch: epoch, Timestamp: ts}.Encode(nil, recs)
}

func testLogger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

func openTestLog(t testing.TB, fsys FS, cfg LogConfig) *Log {
	t.Helper()
	l, err := OpenLog(fsys, testDir, cfg, testLogger(t))
	if err != nil {
		t.Fatalf("OpenLog: %v\n%s", err, fsys)
	}
	return l
}

// readAll reads the whole log as a list of raw batches, checking each.
func readAll(t testing.TB, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	for off := l.StartOffset(); off < l.EndOffset(); {
		raw, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(raw) == 0 {
			t.Fatalf("Read(%d) returned nothing below end %d", off, l.EndOffset())
		}
		_, err = batch.Walk(raw, func(h batch.Header, b []byte) error {
			if h.BaseOffset > off && len(out) > 0 {
				return fmt.Errorf("gap: batch %d after offset %d", h.BaseOffset, off)
			}
			out = append(out, bytes.Clone(b))
			off = h.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func mustFile(t testing.TB, fsys FS, name string) []byte {
	t.Helper()
	b, err := readFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
