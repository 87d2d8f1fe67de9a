package storage

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/kraftd/kraftd/storage/batch"
)

// FuzzRecover writes arbitrary bytes as the only segment and opens the log:
// it must not panic, must serve only whole, valid, contiguous batches, and
// must take an append afterwards.
func FuzzRecover(f *testing.F) {
	good := append(mkBatch(0, 1, 2, 5, 10), mkBatch(2, 1, 1, 50, 11)...)
	good = append(good, mkBatch(3, 2, 3, 1, 12)...)
	f.Add(good)
	f.Add(good[:len(good)-7])
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x10
	f.Add(flipped)
	epochDown := append(mkBatch(0, 5, 1, 1, 1), mkBatch(1, 4, 1, 1, 1)...)
	f.Add(epochDown)
	f.Add(append(bytes.Clone(good), make([]byte, 100)...)) // preallocated-looking zeros
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := NewMemFS()
		_ = fsys.MkdirAll(testDir, 0o755)
		w, _ := fsys.Create(filepath.Join(testDir, segmentName(0, logSuffix)))
		_, _ = w.Write(data)
		_ = w.Sync()
		_ = w.Close()
		l, err := OpenLog(fsys, testDir, LogConfig{MaxIndexBytes: 1024}, testLogger(t))
		if err != nil {
			t.Fatalf("OpenLog: %v", err)
		}
		defer l.Close()
		next := int64(0)
		for next < l.EndOffset() {
			raw, err := l.Read(next, 1<<20)
			if err != nil || len(raw) == 0 {
				t.Fatalf("Read(%d): %d bytes, %v", next, len(raw), err)
			}
			n, err := batch.Walk(raw, func(h batch.Header, _ []byte) error {
				if h.BaseOffset != next {
					t.Fatalf("batch at %d, expected %d", h.BaseOffset, next)
				}
				next = h.NextOffset()
				return nil
			})
			if err != nil || n != len(raw) {
				t.Fatalf("served invalid bytes: %v", err)
			}
		}
		if !bytes.HasPrefix(data, mustSegment(t, fsys)) {
			t.Fatal("recovered segment is not a prefix of the input")
		}
		if err := l.Append(mkBatch(l.EndOffset(), l.LastEpoch(), 1, 3, 1)); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
	})
}

func mustSegment(t *testing.T, fsys FS) []byte {
	return mustFile(t, fsys, filepath.Join(testDir, segmentName(0, logSuffix)))
}

func FuzzReadQuorumState(f *testing.F) {
	f.Add([]byte(`{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`))
	f.Add([]byte(`{"clusterId":"","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":1}],"data_version":0}`))
	f.Add([]byte(`{"data_version":1}` + "\n" + `trailing`))
	f.Add([]byte(`{"leaderId":99999999999,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"x","data_version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		qs, err := ParseQuorumState(data)
		if err != nil {
			return
		}
		// Whatever parses re-encodes and parses to the same state.
		out, err := EncodeQuorumState(qs)
		if err != nil {
			return // e.g. v0 with a directory id cannot be written
		}
		back, err := ParseQuorumState(out)
		if err != nil || back.LeaderID != qs.LeaderID || back.LeaderEpoch != qs.LeaderEpoch ||
			back.VotedID != qs.VotedID || back.VotedDirectoryID != qs.VotedDirectoryID || len(back.CurrentVoters) != len(qs.CurrentVoters) {
			t.Fatalf("round trip: %+v -> %s -> %+v, %v", qs, out, back, err)
		}
	})
}

func FuzzReadMetaProperties(f *testing.F) {
	f.Add([]byte("#\n#Mon Nov 30 10:34:43 UTC 2026\nnode.id=1\ndirectory.id=QU53eQG3TQS2t2nsfdC5qA\nversion=1\ncluster.id=a3JhZnRkLWdvbGRlbi0wMQ\n"))
	f.Add([]byte("version=0\nbroker.id=3\ncluster.id=x\n"))
	f.Add([]byte("cluster.id\\\n  = a\\u0041\\\\\nnode.id:1\nversion 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMetaProperties(data)
		if err != nil {
			return
		}
		out, err := EncodeMetaProperties(m, time.Unix(0, 0).UTC())
		if err != nil {
			t.Fatalf("valid properties do not encode: %+v: %v", m, err)
		}
		back, err := ParseMetaProperties(out)
		if err != nil || back != m {
			t.Fatalf("round trip: %+v -> %q -> %+v, %v", m, out, back, err)
		}
	})
}

// FuzzParseSmallFiles covers the text files of a log directory and the
// properties reader used for server.properties.
func FuzzParseSmallFiles(f *testing.F) {
	f.Add([]byte("0\n1\n0 0\n"))
	f.Add([]byte("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"))
	f.Add([]byte("#c\nnode.id=1\\\n  2\nkey\\=x: y\\u0041\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseLeaderEpochCheckpoint(b)
		_, _ = ParsePartitionMetadata(b)
		_ = ParseJavaProperties(string(b))
		DecodeOffsetIndex(0, b)
		DecodeTimeIndex(0, b)
	})
}
