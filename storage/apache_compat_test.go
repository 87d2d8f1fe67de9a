package storage

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/storage/batch"
	"github.com/kraftd/kraftd/storage/uuid"
)

// TestApacheWrittenFiles opens the directories a real Apache Kafka wrote
// (compat/testdata/apache-<version>/, captured by the compat harness),
// parses every file, and, where the bytes are deterministic, checks that our
// writers produce the same bytes. FILES.txt there lists each file's size as
// Apache left it, including files not committed (indexes).
func TestApacheWrittenFiles(t *testing.T) {
	roots, _ := filepath.Glob("../compat/testdata/apache-*")
	if len(roots) == 0 {
		t.Skip("no Apache-written files in compat/testdata")
	}
	for _, root := range roots {
		t.Run(filepath.Base(root), func(t *testing.T) { checkApacheDir(t, root) })
	}
}

func checkApacheDir(t *testing.T, root string) {
	sizes := readFilesTxt(t, filepath.Join(root, "FILES.txt"))
	fsys := NewMemFS()
	copyIntoMemFS(t, fsys, root, "/data")
	mdir := "/data/" + MetadataLogDirName

	// meta.properties: parse, and re-encode with Apache's date line.
	raw := mustFile(t, fsys, "/data/meta.properties")
	mp, err := ParseMetaProperties(raw)
	if err != nil {
		t.Fatalf("meta.properties: %v", err)
	}
	dateLine := strings.SplitN(string(raw), "\n", 3)[1]
	when, err := time.Parse("Mon Jan 02 15:04:05 MST 2006", strings.TrimPrefix(dateLine, "#"))
	if err != nil {
		t.Fatalf("date line %q: %v", dateLine, err)
	}
	if ours, _ := EncodeMetaProperties(mp, when); !bytes.Equal(ours, raw) {
		t.Errorf("meta.properties differs\nours   %q\napache %q", ours, raw)
	}

	// quorum-state: byte for byte.
	raw = mustFile(t, fsys, mdir+"/"+QuorumStateName)
	qs, err := ParseQuorumState(raw)
	if err != nil {
		t.Fatalf("quorum-state: %v", err)
	}
	if ours, _ := EncodeQuorumState(qs); !bytes.Equal(ours, raw) {
		t.Errorf("quorum-state differs\nours   %s\napache %s", ours, raw)
	}

	// partition.metadata and leader-epoch-checkpoint: byte for byte.
	if raw := mustFile(t, fsys, mdir+"/"+PartitionMetadataName); !bytes.Equal(raw, EncodePartitionMetadata(mustPM(t, raw))) {
		t.Errorf("partition.metadata differs: %q", raw)
	}
	apacheEpochs := mustFile(t, fsys, mdir+"/"+LeaderEpochCheckpointName)
	entries, err := ParseLeaderEpochCheckpoint(apacheEpochs)
	if err != nil {
		t.Fatalf("leader-epoch-checkpoint: %v", err)
	}
	if !bytes.Equal(EncodeLeaderEpochCheckpoint(entries), apacheEpochs) {
		t.Errorf("leader-epoch-checkpoint differs: %q", apacheEpochs)
	}

	// Snapshot-format files are whole valid batches.
	for _, name := range []string{"/data/bootstrap.checkpoint", mdir + "/" + BootstrapSnapshotID.FileName()} {
		if raw, err := readFile(fsys, name); err == nil {
			if n, err := batch.Walk(raw, func(batch.Header, []byte) error { return nil }); err != nil || n != len(raw) {
				t.Errorf("%s: %d of %d bytes are valid batches: %v", name, n, len(raw), err)
			}
		}
	}

	// The log opens with nothing cut, and the epoch cache matches Apache's.
	logName := mdir + "/00000000000000000000.log"
	before := mustFile(t, fsys, logName)
	l, err := OpenLog(fsys, mdir, LogConfig{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l); len(bytes.Join(got, nil)) != len(before) {
		t.Errorf("recovered %d bytes of %d", len(bytes.Join(got, nil)), len(before))
	}
	if got := l.EpochEntries(); len(got) != len(entries) || (len(got) > 0 && got[0] != entries[0]) {
		t.Errorf("epochs %v, Apache %v", got, entries)
	}
	if ids := l.Snapshots(); sizes[MetadataLogDirName+"/"+BootstrapSnapshotID.FileName()] > 0 &&
		(len(ids) == 0 || !ids[0].IsBootstrap()) {
		t.Errorf("bootstrap snapshot not listed: %v", ids)
	}
	// Indexes: Apache's file sizes say whether it closed the segment
	// (trimmed) or stopped with it active (preallocated); compare with ours
	// in the same state, and the bytes when the files were kept.
	indexes := func() map[string][]byte {
		out := map[string][]byte{}
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			rel := MetadataLogDirName + "/" + segmentName(0, suffix)
			out[rel] = mustFile(t, fsys, "/data/"+rel)
		}
		return out
	}
	active := indexes()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	closed := indexes()
	for rel, ours := range closed {
		want, ok := sizes[rel]
		if !ok {
			continue
		}
		if want == int64(len(active[rel])) {
			ours = active[rel] // Apache left the segment active
		}
		if int64(len(ours)) != want {
			t.Errorf("%s: ours %d bytes, Apache %d", rel, len(ours), want)
		}
		if apache, err := os.ReadFile(filepath.Join(root, rel)); err == nil && !bytes.Equal(apache, ours) {
			t.Errorf("%s differs", rel)
		}
	}
	if after := mustFile(t, fsys, logName); !bytes.Equal(after, before) {
		t.Error("opening and closing changed the segment")
	}
	if after := mustFile(t, fsys, mdir+"/"+LeaderEpochCheckpointName); !bytes.Equal(after, apacheEpochs) {
		t.Errorf("we rewrote leader-epoch-checkpoint as %q", after)
	}
}

func mustPM(t *testing.T, raw []byte) uuid.UUID {
	u, err := ParsePartitionMetadata(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func readFilesTxt(t *testing.T, name string) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(name)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 {
			if n, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				out[fields[0]] = n
			}
		}
	}
	return out
}

func copyIntoMemFS(t *testing.T, fsys *MemFS, src, dst string) {
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return fsys.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := fsys.Create(target)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Write(data); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		return fsys.SyncDir(filepath.Dir(target))
	})
	if err != nil {
		t.Fatal(err)
	}
}
