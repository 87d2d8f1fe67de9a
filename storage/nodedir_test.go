package storage

import (
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
	"github.com/kraftd/kraftd/storage/uuid"
)

const nodeDir = "/meta"

var formatTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func testBootstrap() []metadata.Record {
	return []metadata.Record{&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27}}
}

func voterSet(ids ...int32) *metadata.VotersRecord {
	set := &metadata.VotersRecord{}
	for _, id := range ids {
		set.Voters = append(set.Voters, metadata.VotersRecordVoter{
			VoterId:             id,
			VoterDirectoryId:    uuid.FromBits(7, uint64(100+id)),
			Endpoints:           []metadata.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "localhost", Port: uint16(9092 + id)}},
			KRaftVersionFeature: metadata.VotersRecordKRaftVersionFeature{MaxSupportedVersion: 1},
		})
	}
	return set
}

// testFormat is what format writes for node with the bootstrap b.
func testFormat(node int32, b metadata.Bootstrap) NodeDirFormat {
	if b.Records == nil {
		b.Records = testBootstrap()
	}
	f := NodeDirFormat{ClusterID: "q1Sh-9_ISia_zwGINzRvyQ", NodeID: node, DirectoryID: b.DirectoryID(node), Now: formatTime}
	f.BootstrapCheckpoint, f.BootstrapSnapshot = metadata.EncodeBootstrap(b, formatTime.UnixMilli())
	return f
}

// decodeBootstrap decodes the bootstrap files d read.
func decodeBootstrap(t *testing.T, d *NodeDir) metadata.Bootstrap {
	t.Helper()
	b := d.Bootstrap
	boot, err := metadata.DecodeBootstrap(b.CheckpointPath, b.Checkpoint, b.SnapshotPath, b.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	return boot
}

func formatAndOpen(t *testing.T, fsys FS, f NodeDirFormat) *NodeDir {
	t.Helper()
	if err := FormatNodeDir(fsys, nodeDir, f); err != nil {
		t.Fatal(err)
	}
	d, err := OpenNodeDir(fsys, nodeDir, NodeDirConfig{NodeID: f.NodeID}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if d.Meta.ClusterID != f.ClusterID || d.Meta.NodeID != f.NodeID || d.Meta.Version != 1 || d.Meta.DirectoryID == uuid.Zero {
		t.Fatalf("meta.properties %+v", d.Meta)
	}
	if !reflect.DeepEqual(d.Bootstrap.Checkpoint, f.BootstrapCheckpoint) || !reflect.DeepEqual(d.Bootstrap.Snapshot, f.BootstrapSnapshot) ||
		!reflect.DeepEqual(decodeBootstrap(t, d).Records, testBootstrap()) {
		t.Fatalf("bootstrap %+v", d.Bootstrap)
	}
	if d.QuorumState.LeaderID != -1 || d.QuorumState.VotedID != -1 || d.Log.EndOffset() != 0 {
		t.Fatalf("fresh directory: quorum-state %+v, log end %d", d.QuorumState, d.Log.EndOffset())
	}
	return d
}

func TestNodeDirStatic(t *testing.T) {
	fsys := NewMemFS()
	d := formatAndOpen(t, fsys, testFormat(1, metadata.Bootstrap{}))
	if b := decodeBootstrap(t, d); b.Voters != nil || b.KRaftVersion != 0 || len(d.Log.Snapshots()) != 0 {
		t.Fatalf("static quorum: voters %+v, kraft.version %d, snapshots %v", b.Voters, b.KRaftVersion, d.Log.Snapshots())
	}
	// quorum-state round trips through the directory.
	qs := QuorumState{LeaderID: 1, LeaderEpoch: 4, VotedID: 1, CurrentVoters: []int32{1}}
	if err := d.WriteQuorumState(qs); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d, err := OpenNodeDir(fsys, nodeDir, NodeDirConfig{NodeID: 1}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !reflect.DeepEqual(d.QuorumState, qs) {
		t.Fatalf("reopened quorum-state %+v, want %+v", d.QuorumState, qs)
	}
}

func TestNodeDirStandalone(t *testing.T) {
	d := formatAndOpen(t, NewMemFS(), testFormat(1, metadata.Bootstrap{Voters: voterSet(1), KRaftVersion: 1}))
	if b := decodeBootstrap(t, d); b.KRaftVersion != 1 || !reflect.DeepEqual(b.Voters, voterSet(1)) {
		t.Fatalf("kraft.version %d, voters %+v", b.KRaftVersion, b.Voters)
	}
	// The node's directory.id is its voter entry's.
	if d.Meta.DirectoryID != uuid.FromBits(7, 101) {
		t.Fatalf("directory.id %s", d.Meta.DirectoryID)
	}
	if got := d.Log.Snapshots(); len(got) != 1 || got[0] != BootstrapSnapshotID {
		t.Fatalf("snapshots %v", got)
	}
}

func TestNodeDirInitialControllers(t *testing.T) {
	d := formatAndOpen(t, NewMemFS(), testFormat(2, metadata.Bootstrap{Voters: voterSet(1, 2, 3), KRaftVersion: 1}))
	if b := decodeBootstrap(t, d); b.KRaftVersion != 1 || len(b.Voters.Voters) != 3 || d.Meta.DirectoryID != uuid.FromBits(7, 102) {
		t.Fatalf("kraft.version %d, voters %+v, directory.id %s", b.KRaftVersion, b.Voters, d.Meta.DirectoryID)
	}
}

func TestNodeDirRefusals(t *testing.T) {
	fsys := NewMemFS()
	if _, err := OpenNodeDir(fsys, nodeDir, NodeDirConfig{NodeID: 1}, testLogger(t)); !errors.Is(err, ErrNotFormatted) {
		t.Fatalf("unformatted: %v", err)
	}
	f := testFormat(1, metadata.Bootstrap{})
	if err := FormatNodeDir(fsys, nodeDir, f); err != nil {
		t.Fatal(err)
	}
	if err := FormatNodeDir(fsys, nodeDir, f); !errors.Is(err, ErrFormatted) {
		t.Fatalf("second format: %v", err)
	}
	if _, err := OpenNodeDir(fsys, nodeDir, NodeDirConfig{NodeID: 2}, testLogger(t)); !errors.Is(err, ErrWrongNode) {
		t.Fatalf("node.id 2: %v", err)
	}
	d, err := OpenNodeDir(fsys, nodeDir, NodeDirConfig{NodeID: 1}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenNodeDir(fsys, nodeDir, NodeDirConfig{NodeID: 1}, testLogger(t)); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	d.Close()
	// The lock goes with Close, and an open that fails after taking it
	// (here on a corrupt quorum-state, read last) leaves none behind.
	if err := WriteFileAtomic(fsys, nodeDir+"/"+MetadataLogDirName+"/"+QuorumStateName, []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := OpenNodeDir(fsys, nodeDir, NodeDirConfig{NodeID: 1}, testLogger(t)); err == nil || errors.Is(err, ErrLocked) {
			t.Fatalf("corrupt quorum-state: %v", err)
		}
	}
}

func TestListLogFiles(t *testing.T) {
	fsys := NewMemFS()
	d := formatAndOpen(t, fsys, testFormat(1, metadata.Bootstrap{Voters: voterSet(1), KRaftVersion: 1}))
	raw := mkBatch(0, 1, 3, 10, 1000)
	if err := d.Log.Append(raw); err != nil {
		t.Fatal(err)
	}
	if err := d.Log.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{nodeDir, nodeDir + "/" + MetadataLogDirName} {
		files, err := ListLogFiles(fsys, dir)
		if err != nil {
			t.Fatal(err)
		}
		if files.Dir != nodeDir+"/"+MetadataLogDirName || !files.HasSnapshot || files.Snapshot != BootstrapSnapshotID || !reflect.DeepEqual(files.Segments, []int64{0}) {
			t.Fatalf("%s: %+v", dir, files)
		}
		seg, err := files.OpenSegment(0)
		if err != nil {
			t.Fatal(err)
		}
		r := batch.NewReader(seg, 0)
		if h, _, err := r.Next(); err != nil || h.RecordCount != 3 {
			t.Fatalf("segment: %+v %v", h, err)
		}
		if _, _, err := r.Next(); err != io.EOF {
			t.Fatalf("segment end: %v", err)
		}
		seg.Close()
		snap, err := files.OpenSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		_, info, err := metadata.LoadSnapshot(snap)
		snap.Close()
		if err != nil || info.KRaftVersion != 1 || info.Voters == nil {
			t.Fatalf("bootstrap snapshot: %+v %v", info, err)
		}
	}
}
