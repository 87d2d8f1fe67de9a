package storage

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/storage/uuid"
)

func TestLeaderEpochCheckpointFormat(t *testing.T) {
	entries := []EpochEntry{{1, 0}, {3, 17}, {12, 123456789012}}
	want := "0\n3\n1 0\n3 17\n12 123456789012\n"
	if got := string(EncodeLeaderEpochCheckpoint(entries)); got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if got := string(EncodeLeaderEpochCheckpoint(nil)); got != "0\n0\n" {
		t.Fatalf("empty: %q", got)
	}
	back, err := ParseLeaderEpochCheckpoint([]byte("0\n3\n1  0\n3\t17\n12 123456789012"))
	if err != nil || len(back) != 3 || back[2] != entries[2] {
		t.Fatalf("parse: %v %v", back, err)
	}
	for _, in := range []string{"", "0\n", "0\n0\n"} {
		if got, err := ParseLeaderEpochCheckpoint([]byte(in)); err != nil || len(got) != 0 {
			t.Fatalf("%q: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"1\n0\n", "0\n2\n1 0\n", "0\nx\n", "0\n1\n1\n", "0\n1\n1 2 3\n"} {
		if _, err := ParseLeaderEpochCheckpoint([]byte(bad)); !errors.Is(err, ErrBadCheckpoint) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func TestEpochCacheAssign(t *testing.T) {
	var c epochCache
	c.assign(1, 0)
	c.assign(1, 5) // same epoch, later offset: no change
	c.assign(3, 10)
	c.assign(2, 10) // conflicts: drops 3@10
	if len(c.entries) != 2 || c.entries[1] != (EpochEntry{2, 10}) {
		t.Fatalf("%v", c.entries)
	}
	c.assign(4, 20)
	c.truncateFromStart(15)
	if len(c.entries) != 2 || c.entries[0] != (EpochEntry{2, 15}) {
		t.Fatalf("truncateFromStart: %v", c.entries)
	}
	c.truncateFromEnd(20)
	if len(c.entries) != 1 {
		t.Fatalf("truncateFromEnd: %v", c.entries)
	}
}

func TestPartitionMetadataFormat(t *testing.T) {
	want := "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
	if got := string(EncodePartitionMetadata(uuid.MetadataTopicID)); got != want {
		t.Fatalf("got %q", got)
	}
	if id, err := ParsePartitionMetadata([]byte(want + "\n")); err != nil || id != uuid.MetadataTopicID {
		t.Fatalf("parse: %v %v", id, err)
	}
	if _, err := ParsePartitionMetadata([]byte("version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")); err == nil {
		t.Fatal("version 1 accepted")
	}
	// OpenLog writes it.
	fsys := NewMemFS()
	l := openTestLog(t, fsys, LogConfig{})
	l.Close()
	if got := string(mustFile(t, fsys, filepath.Join(testDir, PartitionMetadataName))); got != want {
		t.Fatalf("written %q", got)
	}
	if got := mustFile(t, fsys, filepath.Join(testDir, LeaderEpochCheckpointName)); len(got) != 0 {
		t.Fatalf("a fresh log's leader-epoch-checkpoint is empty in Apache, got %q", got)
	}
}

func TestQuorumStateFormat(t *testing.T) {
	dir := uuid.FromBits(0x0123456789abcdef, 0x0fedcba987654321)
	cases := []struct {
		qs   QuorumState
		want string
	}{
		{QuorumState{LeaderID: 1, LeaderEpoch: 5, VotedID: -1, CurrentVoters: []int32{1, 2, 3}, DataVersion: 0},
			`{"clusterId":"","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}`},
		{QuorumState{LeaderID: -1, LeaderEpoch: 0, VotedID: -1, DataVersion: 0},
			`{"clusterId":"","leaderId":-1,"leaderEpoch":0,"votedId":-1,"appliedOffset":0,"currentVoters":[],"data_version":0}`},
		{QuorumState{LeaderID: 1, LeaderEpoch: 1, VotedID: -1, DataVersion: 1},
			`{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`},
		{QuorumState{LeaderID: -1, LeaderEpoch: 7, VotedID: 2, VotedDirectoryID: dir, DataVersion: 1},
			`{"leaderId":-1,"leaderEpoch":7,"votedId":2,"votedDirectoryId":"ASNFZ4mrze8P7cuph2VDIQ","data_version":1}`},
	}
	for _, c := range cases {
		got, err := EncodeQuorumState(c.qs)
		if err != nil || string(got) != c.want {
			t.Fatalf("encode %+v\n got %s (%v)\nwant %s", c.qs, got, err, c.want)
		}
		back, err := ParseQuorumState(got)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := EncodeQuorumState(back)
		if !bytes.Equal(again, got) {
			t.Fatalf("round trip: %s", again)
		}
	}
	// Apache requires every field of the version.
	for _, bad := range []string{
		`{"leaderId":1,"leaderEpoch":1,"votedId":-1,"data_version":1}`,
		`{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA"}`,
		`{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":2}`,
		`{"clusterId":"","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,"data_version":0}`,
		`[1]`, ``,
	} {
		if _, err := ParseQuorumState([]byte(bad)); err == nil {
			t.Fatalf("accepted %s", bad)
		}
	}
	if _, err := EncodeQuorumState(QuorumState{DataVersion: 1, CurrentVoters: []int32{1}}); err == nil {
		t.Fatal("v1 with voters accepted")
	}
	fsys := NewMemFS()
	_ = fsys.MkdirAll("/d", 0o755)
	if _, err := ReadQuorumState(fsys, "/d/quorum-state"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	if err := WriteQuorumState(fsys, "/d/quorum-state", cases[3].qs); err != nil {
		t.Fatal(err)
	}
	// Durable at return: survives any crash.
	qs, err := ReadQuorumState(fsys.Crash(newRand(3)), "/d/quorum-state")
	if err != nil || qs.VotedDirectoryID != dir || qs.LeaderEpoch != 7 {
		t.Fatalf("after crash %+v %v", qs, err)
	}
}

func TestMetaPropertiesFormat(t *testing.T) {
	m := MetaProperties{Version: 1, ClusterID: "a3JhZnRkLWdvbGRlbi0wMQ", NodeID: 1,
		DirectoryID: mustUUID(t, "QU53eQG3TQS2t2nsfdC5qA")}
	now := time.Date(2026, 11, 30, 10, 34, 43, 0, time.UTC)
	// Byte for byte what Apache 4.1.2 wrote (compat/testdata/apache-4.1.2).
	want := "#\n#Mon Nov 30 10:34:43 UTC 2026\nnode.id=1\ndirectory.id=QU53eQG3TQS2t2nsfdC5qA\nversion=1\ncluster.id=a3JhZnRkLWdvbGRlbi0wMQ\n"
	got, err := EncodeMetaProperties(m, now)
	if err != nil || string(got) != want {
		t.Fatalf("got %q (%v)", got, err)
	}
	back, err := ParseMetaProperties(got)
	if err != nil || back != m {
		t.Fatalf("parse %+v %v", back, err)
	}
	// Tolerant reader: comments, any order, ':' and blanks, continuation.
	loose := "! hi\n  # comment\ncluster.id : abc\nnode.id   7\nversion=1\ndirectory.id=QU53eQG3TQS2\\\n   t2nsfdC5qA\n"
	back, err = ParseMetaProperties([]byte(loose))
	if err != nil || back.ClusterID != "abc" || back.NodeID != 7 || back.DirectoryID != m.DirectoryID {
		t.Fatalf("loose: %+v %v", back, err)
	}
	// v0 with broker.id.
	back, err = ParseMetaProperties([]byte("version=0\nbroker.id=3\ncluster.id=x\n"))
	if err != nil || back.Version != 0 || back.NodeID != 3 {
		t.Fatalf("v0: %+v %v", back, err)
	}
	for bad, key := range map[string]string{
		"version=1\nnode.id=1\n":                                "cluster.id",
		"version=1\ncluster.id=x\n":                             "node.id",
		"version=1\ncluster.id=x\nnode.id=one\n":                "node.id",
		"version=2\ncluster.id=x\nnode.id=1\n":                  "version",
		"version=1\ncluster.id=x\nnode.id=1\ndirectory.id=zz\n": "directory.id",
	} {
		if _, err := ParseMetaProperties([]byte(bad)); err == nil || !strings.Contains(err.Error(), key) {
			t.Fatalf("%q: error %v does not name %s", bad, err, key)
		}
	}
	if got := escapeProperty("a b=c:d#e!f\\", true); got != `a\ b\=c\:d\#e\!f\\` {
		t.Fatalf("escape %q", got)
	}
	fsys := NewMemFS()
	_ = fsys.MkdirAll("/d", 0o755)
	if err := WriteMetaProperties(fsys, "/d/meta.properties", m, now); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadMetaProperties(fsys.Crash(newRand(1)), "/d/meta.properties"); err != nil || got != m {
		t.Fatalf("after crash %+v %v", got, err)
	}
}

func mustUUID(t testing.TB, s string) uuid.UUID {
	u, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestUUID(t *testing.T) {
	if uuid.MetadataTopicID.String() != "AAAAAAAAAAAAAAAAAAAAAQ" || uuid.Zero.String() != "AAAAAAAAAAAAAAAAAAAAAA" {
		t.Fatal("reserved ids")
	}
	for _, s := range []string{"", "AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAA==", "AAAAAAAAAAAAAAAAAAAA+A", "AAAAAAAAAAAAAAAAAAAAA/"} {
		if _, err := uuid.Parse(s); err == nil {
			t.Fatalf("%q parsed", s)
		}
	}
	// A reader that first yields reserved and '-'-leading ids.
	var seq bytes.Buffer
	seq.Write(make([]byte, 16))                          // Zero
	seq.Write(append(make([]byte, 15), 2))               // Lost
	seq.Write(append([]byte{0xfb}, make([]byte, 15)...)) // starts with '-' in base64url ("-" is 62)
	seq.Write(bytes.Repeat([]byte{0x42}, 16))
	u, err := uuid.Random(&seq)
	if err != nil || u.IsReservedDirectoryID() || u.String()[0] == '-' {
		t.Fatalf("%v %v", u, err)
	}
	if u[6]>>4 != 4 || u[8]>>6 != 2 {
		t.Fatalf("not a v4 uuid: %x", u[:])
	}
	for i := 0; i < 1000; i++ {
		u := uuid.MustRandom()
		if back, err := uuid.Parse(u.String()); err != nil || back != u || u.String()[0] == '-' {
			t.Fatalf("%v %v", u, err)
		}
	}
}
