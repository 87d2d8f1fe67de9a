package storage

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/metadata"
)

// removeAll deletes a MemFS directory and what it holds.
func removeAll(t *testing.T, fsys *MemFS, dir string) {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := fsys.Remove(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fsys.Remove(dir); err != nil {
		t.Fatal(err)
	}
}

func openNodeDir(fsys FS, cfg NodeDirConfig, t *testing.T) (*NodeDir, error) {
	d, err := OpenNodeDir(fsys, nodeDir, cfg, testLogger(t))
	if err == nil {
		t.Cleanup(func() { d.Close() })
	}
	return d, err
}

// A directory whose node ran and whose __cluster_metadata-0 then went
// away refuses to open; a freshly formatted one (kraftd's or Apache's
// layout, which have no log either) opens; AcceptLostLog opens it empty.
func TestNodeDirLostLog(t *testing.T) {
	for name, voters := range map[string]bool{"static": false, "dynamic": true} {
		t.Run(name, func(t *testing.T) {
			fsys := NewMemFS()
			b := metadata.Bootstrap{}
			if voters {
				b.Voters, b.KRaftVersion = voterSet(1), 1
			}
			f := testFormat(1, b)
			if err := FormatNodeDir(fsys, nodeDir, f); err != nil {
				t.Fatal(err)
			}
			d, err := OpenNodeDir(fsys, nodeDir, NodeDirConfig{NodeID: 1}, testLogger(t))
			if err != nil {
				t.Fatalf("freshly formatted: %v", err)
			}
			if err := d.Log.Append(mkBatch(0, 1, 3, 10, 1000)); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			removeAll(t, fsys, filepath.Join(nodeDir, MetadataLogDirName))

			_, err = openNodeDir(fsys, NodeDirConfig{NodeID: 1}, t)
			if !errors.Is(err, ErrLostLog) || !strings.Contains(err.Error(), MetadataLogDirName) {
				t.Fatalf("lost log: %v", err)
			}
			if _, err := fsys.Stat(filepath.Join(nodeDir, MetadataLogDirName)); err == nil {
				t.Fatal("refusing recreated the log directory")
			}
			d, err = openNodeDir(fsys, NodeDirConfig{NodeID: 1, AcceptLostLog: true}, t)
			if err != nil {
				t.Fatalf("AcceptLostLog: %v", err)
			}
			if d.Log.EndOffset() != 0 {
				t.Fatalf("accepted lost log ends at %d", d.Log.EndOffset())
			}
		})
	}
}

// Apache's format leaves no LogStartedName: such a directory opens, and
// the file appears once the log is there.
func TestNodeDirApacheFormattedOpens(t *testing.T) {
	fsys := NewMemFS()
	meta := MetaProperties{Version: 1, ClusterID: "q1Sh-9_ISia_zwGINzRvyQ", NodeID: 1, DirectoryID: voterSet(1).Voters[0].VoterDirectoryId}
	if err := fsys.MkdirAll(nodeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteMetaProperties(fsys, filepath.Join(nodeDir, MetaPropertiesName), meta, formatTime); err != nil {
		t.Fatal(err)
	}
	d, err := OpenNodeDir(fsys, nodeDir, NodeDirConfig{NodeID: 1}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := fsys.Stat(filepath.Join(nodeDir, LogStartedName)); err != nil {
		t.Fatalf("%s after the first open: %v", LogStartedName, err)
	}
	// Reformatting (after removing meta.properties) makes it new again.
	if err := fsys.Remove(filepath.Join(nodeDir, MetaPropertiesName)); err != nil {
		t.Fatal(err)
	}
	removeAll(t, fsys, filepath.Join(nodeDir, MetadataLogDirName))
	f := testFormat(1, metadata.Bootstrap{})
	if err := FormatNodeDir(fsys, nodeDir, f); err != nil {
		t.Fatal(err)
	}
	if _, err := openNodeDir(fsys, NodeDirConfig{NodeID: 1}, t); err != nil {
		t.Fatalf("reformatted: %v", err)
	}
}

// No crash, at any write or fsync of the first start or of a snapshot
// install, leaves a directory that looks as if its log were lost.
func TestNodeDirCrashNeverLooksLost(t *testing.T) {
	for k := 1; k <= 40; k++ {
		for _, failSync := range []bool{false, true} {
			rng := newRand(uint64(k))
			fsys := NewMemFS()
			f := testFormat(1, metadata.Bootstrap{})
			if err := FormatNodeDir(fsys, nodeDir, f); err != nil {
				t.Fatal(err)
			}
			arm := func(n int) {
				if failSync {
					fsys.FailSync(n)
				} else {
					fsys.FailWrite(n)
				}
			}
			cfg := NodeDirConfig{NodeID: 1, Log: LogConfig{MaxIndexBytes: 1024}}
			arm(k)
			if d, err := OpenNodeDir(fsys, nodeDir, cfg, testLogger(t)); err == nil {
				_ = d.Log.Append(mkBatch(0, 1, 2, 10, 1))
				_ = d.Log.Sync()
				if w, err := d.Log.CreateSnapshot(SnapshotID{10, 2}); err == nil {
					_ = w.Write([]byte("snapshot"))
					if w.Freeze() == nil {
						_ = d.Log.ResetTo(10)
					}
				}
			}
			arm(0)
			crashed := fsys.Crash(rng)
			d, err := OpenNodeDir(crashed, nodeDir, cfg, testLogger(t))
			if err != nil {
				t.Fatalf("fail %s %d, then crash: %v\n%s", map[bool]string{false: "write", true: "sync"}[failSync], k, err, crashed)
			}
			d.Close()
		}
	}
}
