package recovery

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
	"github.com/kraftd/kraftd/storage/uuid"
)

var (
	now      = time.Unix(1_700_000_000, 0)
	endpoint = []metadata.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093}}
)

func quiet(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// fixture formats a metadata directory for node 1 at metadata.version mv,
// static unless voters is set, and appends batches to its log.
func fixture(t *testing.T, mv int16, voters *metadata.VotersRecord, batches ...[]byte) Config {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "meta")
	boot := metadata.Bootstrap{Records: []metadata.Record{&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: mv}}}
	if voters != nil {
		boot.Voters, boot.KRaftVersion = voters, 1
	}
	f := storage.NodeDirFormat{ClusterID: "MkU3OEVBNTcwNTJENDM2Qg", NodeID: 1, DirectoryID: boot.DirectoryID(1), Now: now}
	f.BootstrapCheckpoint, f.BootstrapSnapshot = metadata.EncodeBootstrap(boot, now.UnixMilli())
	if err := storage.FormatNodeDir(storage.OSFS{}, dir, f); err != nil {
		t.Fatal(err)
	}
	nd, err := storage.OpenNodeDir(storage.OSFS{}, dir, storage.NodeDirConfig{NodeID: 1}, quiet(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := nd.Log.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := nd.Log.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := nd.WriteQuorumState(storage.QuorumState{LeaderID: 2, LeaderEpoch: 3, VotedID: 2, DataVersion: min(boot.KRaftVersion, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := nd.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := Config{NodeID: 1, MetadataLogDir: dir, Endpoints: endpoint}
	if voters == nil {
		cfg.StaticVoters = []int32{1, 2, 3}
	}
	return cfg
}

func control(base int64, epoch int32, vs ...metadata.ControlValue) []byte {
	var recs []batch.Record
	for _, v := range vs {
		recs = append(recs, controlRecord(v))
	}
	return batch.Builder{BaseOffset: base, LeaderEpoch: epoch, Control: true}.Encode(nil, recs)
}

func data(base int64, epoch int32, recs ...metadata.Record) []byte {
	var out []batch.Record
	for _, r := range recs {
		out = append(out, batch.Record{Value: metadata.EncodeValue(r)})
	}
	return batch.Builder{BaseOffset: base, LeaderEpoch: epoch}.Encode(nil, out)
}

func leaderChange(id int32) *metadata.LeaderChangeMessage {
	return &metadata.LeaderChangeMessage{LeaderId: id}
}

func noop() metadata.Record { return &metadata.NoOpRecord{} }

// staticLog: epochs 1 and 2 wrote metadata records (metadata.version 27
// first), epoch 3 only its leader change: what is proven committed ends
// after epoch 2's first batch.
func staticLog() [][]byte {
	return [][]byte{
		control(0, 1, leaderChange(1)), data(1, 1, &metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27}, noop()),
		control(3, 2, leaderChange(2)), data(4, 2, noop()),
		control(5, 3, leaderChange(3)),
	}
}

func TestInspectStatic(t *testing.T) {
	cfg := fixture(t, 27, nil, staticLog()...)
	s, err := Inspect(storage.OSFS{}, cfg, quiet(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.LogEnd != 6 || s.LogEpoch != 3 || s.Committed != 4 || s.Epoch() != 3 || s.MetadataVersion != 27 || s.KRaftVersion != 0 ||
		!slices.Equal(s.Voters, []int32{1, 2, 3}) || s.VotersFrom != "controller.quorum.voters" {
		t.Fatalf("state %+v", s)
	}
}

func TestRecoverStaticBecomesDynamic(t *testing.T) {
	cfg := fixture(t, 27, nil, staticLog()...)
	before, err := storage.ReadMetaProperties(storage.OSFS{}, filepath.Join(cfg.MetadataLogDir, storage.MetaPropertiesName))
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := Recover(storage.OSFS{}, cfg, now, quiet(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Epoch != 3+EpochJump || !res.Converted || res.DirectoryID == uuid.Zero {
		t.Fatalf("result %+v", res)
	}
	checkRecovered(t, cfg, res, 1)
	after, _ := storage.ReadMetaProperties(storage.OSFS{}, filepath.Join(cfg.MetadataLogDir, storage.MetaPropertiesName))
	if after.DirectoryID != res.DirectoryID || after.DirectoryID == before.DirectoryID || after.ClusterID != before.ClusterID {
		t.Fatalf("meta.properties before %+v after %+v", before, after)
	}
	// Recovering again (a second loss) jumps again from the new epoch.
	_, again, err := Recover(storage.OSFS{}, cfg, now, quiet(t))
	if err != nil || again.Epoch != res.Epoch+EpochJump || again.Converted {
		t.Fatalf("second recover: %+v, %v", again, err)
	}
}

// checkRecovered reads the directory back as Inspect does: the node alone
// under its new directory id, kraft.version 1, quorum-state at the epoch.
func checkRecovered(t *testing.T, cfg Config, res *Result, nodeID int32) {
	t.Helper()
	cfg.StaticVoters = nil // the log's VotersRecord must say it alone
	s, err := Inspect(storage.OSFS{}, cfg, quiet(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.KRaftVersion != 1 || !slices.Equal(s.Voters, []int32{nodeID}) || s.LogEpoch != res.Epoch ||
		s.QuorumState.LeaderEpoch != res.Epoch || s.QuorumState.LeaderID != -1 || s.DirectoryID != res.DirectoryID {
		t.Fatalf("recovered state %+v", s)
	}
}

func TestRecoverDynamic(t *testing.T) {
	old := &metadata.VotersRecord{}
	for id := int32(1); id <= 3; id++ {
		old.Voters = append(old.Voters, metadata.VotersRecordVoter{VoterId: id, VoterDirectoryId: uuid.MustRandom(), Endpoints: endpoint,
			KRaftVersionFeature: metadata.VotersRecordKRaftVersionFeature{MaxSupportedVersion: 1}})
	}
	cfg := fixture(t, 27, old, control(0, 4, leaderChange(2)), data(1, 4, noop()))
	s, _, err := Recover(storage.OSFS{}, cfg, now, quiet(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.KRaftVersion != 1 || !slices.Equal(s.Voters, []int32{1, 2, 3}) || !strings.HasPrefix(s.VotersFrom, "snapshot") {
		t.Fatalf("state before %+v", s)
	}
	s2, err := Inspect(storage.OSFS{}, cfg, quiet(t))
	if err != nil || s2.LogEpoch != 4+EpochJump || !slices.Equal(s2.Voters, []int32{1}) {
		t.Fatalf("after: %+v, %v", s2, err)
	}
}

func TestRecoverRefusals(t *testing.T) {
	t.Run("not a voter", func(t *testing.T) {
		cfg := fixture(t, 27, nil, staticLog()...)
		cfg.StaticVoters = []int32{2, 3, 4}
		if _, _, err := Recover(storage.OSFS{}, cfg, now, quiet(t)); !errors.Is(err, ErrNotVoter) || !strings.Contains(err.Error(), "node.id 1") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("no voters", func(t *testing.T) {
		cfg := fixture(t, 27, nil, staticLog()...)
		cfg.StaticVoters = nil
		if _, err := Inspect(storage.OSFS{}, cfg, quiet(t)); !errors.Is(err, ErrNoVoters) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("static below 3.9", func(t *testing.T) {
		cfg := fixture(t, 20, nil, control(0, 3, leaderChange(1)), data(1, 3, noop()))
		if _, _, err := Recover(storage.OSFS{}, cfg, now, quiet(t)); !errors.Is(err, ErrStaticVoters) || !strings.Contains(err.Error(), "controller.quorum.voters") {
			t.Fatalf("err %v", err)
		}
		cfg.StaticVoters = []int32{1}
		_, res, err := Recover(storage.OSFS{}, cfg, now, quiet(t))
		if err != nil || !res.Static || res.Epoch != 3+EpochJump || res.DirectoryID != uuid.Zero {
			t.Fatalf("with voters=1: %+v, %v", res, err)
		}
	})
	t.Run("kraftd holds the lock", func(t *testing.T) {
		cfg := fixture(t, 27, nil, staticLog()...)
		unlock, err := storage.LockDir(storage.OSFS{}, cfg.MetadataLogDir)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		if _, _, err := Recover(storage.OSFS{}, cfg, now, quiet(t)); !errors.Is(err, ErrLocked) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("not formatted", func(t *testing.T) {
		cfg := Config{NodeID: 1, MetadataLogDir: t.TempDir(), StaticVoters: []int32{1}}
		if _, err := Inspect(storage.OSFS{}, cfg, quiet(t)); !errors.Is(err, storage.ErrNotFormatted) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("wrong node", func(t *testing.T) {
		cfg := fixture(t, 27, nil)
		cfg.NodeID = 7
		if _, err := Inspect(storage.OSFS{}, cfg, quiet(t)); !errors.Is(err, storage.ErrWrongNode) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestInspectDamaged(t *testing.T) {
	for name, damage := range map[string]func(dir string) error{
		"quorum-state": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, storage.MetadataLogDirName, storage.QuorumStateName), []byte("{not json"), 0o644)
		},
		"snapshot": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, storage.MetadataLogDirName, "00000000000000000006-0000000003.checkpoint"), []byte("garbage"), 0o644)
		},
		"meta.properties": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, storage.MetaPropertiesName), []byte("version=1\nnode.id=x\n"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := fixture(t, 27, nil, staticLog()...)
			if err := damage(cfg.MetadataLogDir); err != nil {
				t.Fatal(err)
			}
			_, err := Inspect(storage.OSFS{}, cfg, quiet(t))
			if err == nil || !strings.Contains(err.Error(), name[:8]) {
				t.Fatalf("err %v, want one naming %s", err, name)
			}
		})
	}
}

func TestFromBrokerDir(t *testing.T) {
	// A broker's metadata.log.dir: meta.properties of node 101, the log.
	src := fixture(t, 27, nil, staticLog()...)
	meta := storage.MetaProperties{Version: 1, ClusterID: "MkU3OEVBNTcwNTJENDM2Qg", NodeID: 101, DirectoryID: uuid.MustRandom()}
	if err := storage.WriteMetaProperties(storage.OSFS{}, filepath.Join(src.MetadataLogDir, storage.MetaPropertiesName), meta, now); err != nil {
		t.Fatal(err)
	}
	cfg := Config{NodeID: 7, MetadataLogDir: filepath.Join(t.TempDir(), "meta"), Endpoints: endpoint}
	s, res, err := FromBrokerDir(storage.OSFS{}, src.MetadataLogDir, cfg, now, quiet(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.LogEnd != 6 || s.ClusterID != meta.ClusterID || !res.Converted {
		t.Fatalf("state %+v result %+v", s, res)
	}
	checkRecovered(t, cfg, res, 7)
	if _, _, err := FromBrokerDir(storage.OSFS{}, src.MetadataLogDir, cfg, now, quiet(t)); !errors.Is(err, ErrTargetFormatted) {
		t.Fatalf("into a formatted directory: %v", err)
	}
	// A refusal after the copy leaves the target unformatted: the same
	// command runs again once the configuration is fixed.
	old := fixture(t, 20, nil, control(0, 3, leaderChange(1)), data(1, 3, noop()))
	if err := storage.WriteMetaProperties(storage.OSFS{}, filepath.Join(old.MetadataLogDir, storage.MetaPropertiesName), meta, now); err != nil {
		t.Fatal(err)
	}
	cfg.MetadataLogDir = filepath.Join(t.TempDir(), "meta")
	cfg.StaticVoters = []int32{7, 8}
	if _, _, err := FromBrokerDir(storage.OSFS{}, old.MetadataLogDir, cfg, now, quiet(t)); !errors.Is(err, ErrStaticVoters) {
		t.Fatalf("static below 3.9 with voters 7 and 8: %v", err)
	}
	cfg.StaticVoters = []int32{7}
	if _, res, err := FromBrokerDir(storage.OSFS{}, old.MetadataLogDir, cfg, now, quiet(t)); err != nil || !res.Static {
		t.Fatalf("again with voters=7: %+v, %v", res, err)
	}
	cfg.StaticVoters = nil
	empty := t.TempDir()
	if err := storage.WriteMetaProperties(storage.OSFS{}, filepath.Join(empty, storage.MetaPropertiesName), meta, now); err != nil {
		t.Fatal(err)
	}
	cfg.MetadataLogDir = filepath.Join(t.TempDir(), "meta")
	if _, _, err := FromBrokerDir(storage.OSFS{}, empty, cfg, now, quiet(t)); err == nil || !strings.Contains(err.Error(), "metadata.log.dir") {
		t.Fatalf("from a directory without a log: %v", err)
	}
}
