package recovery

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
	"github.com/kraftd/kraftd/storage/uuid"
)

var (
	// ErrNotVoter: the newest voter set does not name this node.
	ErrNotVoter = errors.New("recovery: node is not a voter")
	// ErrLocked: a running kraftd or Apache process holds the directory.
	ErrLocked = errors.New("recovery: directory is in use")
	// ErrNoVoters: neither the directory nor controller.quorum.voters
	// says who the voters are.
	ErrNoVoters = errors.New("recovery: no voter set")
)

// Config is what recovery needs of the node's configuration.
type Config struct {
	// NodeID is node.id.
	NodeID int32
	// MetadataLogDir is metadata.log.dir (or the first of log.dirs).
	MetadataLogDir string
	// StaticVoters are the ids of controller.quorum.voters; empty for a
	// dynamic quorum (controller.quorum.bootstrap.servers).
	StaticVoters []int32
	// Endpoints are the node's controller listeners as peers reach them:
	// the recovered VotersRecord names them.
	Endpoints []metadata.VotersRecordEndpoint
}

// State is what a metadata directory holds, as Inspect reads it.
type State struct {
	Dir         string
	ClusterID   string
	NodeID      int32
	DirectoryID uuid.UUID
	// Snapshot is the newest snapshot (HasSnapshot), bootstrap snapshot
	// 0-0 included.
	Snapshot    storage.SnapshotID
	HasSnapshot bool
	// LogStart and LogEnd bound the log's offsets; LogEpoch is the epoch
	// of its last batch.
	LogStart, LogEnd int64
	LogEpoch         int32
	QuorumState      storage.QuorumState
	// KRaftVersion and Voters are the newest in force: from the log's
	// control records, else the snapshot's header, else
	// controller.quorum.voters (VotersFrom says which).
	KRaftVersion int16
	Voters       []int32
	VotersFrom   string
	// MetadataVersion is the newest metadata.version level on disk (log,
	// snapshot, then bootstrap), 0 when none says.
	MetadataVersion int16
	// Committed is the end of what the directory proves committed: every
	// offset below it was (CommittedWhy says how it knows).
	Committed    int64
	CommittedWhy string
}

// Epoch is the newest epoch the directory knows of.
func (s *State) Epoch() int32 {
	return max(s.LogEpoch, s.QuorumState.LeaderEpoch, s.Snapshot.Epoch)
}

// open takes the directory for recovery: it refuses one a kraftd or an
// Apache process holds (storage.OpenNodeDir's lock), then opens it as a
// start would, with the bootstrap records format left.
func open(fsys storage.FS, cfg Config, logger zerolog.Logger) (*storage.NodeDir, []metadata.Record, error) {
	nd, err := storage.OpenNodeDir(fsys, cfg.MetadataLogDir, storage.NodeDirConfig{NodeID: cfg.NodeID}, logger)
	if errors.Is(err, storage.ErrLocked) {
		return nil, nil, fmt.Errorf("%w: %v", ErrLocked, err)
	}
	if err != nil {
		return nil, nil, err
	}
	b := nd.Bootstrap
	boot, err := metadata.DecodeBootstrap(b.CheckpointPath, b.Checkpoint, b.SnapshotPath, b.Snapshot)
	if err != nil {
		nd.Close()
		return nil, nil, err
	}
	return nd, boot.Records, nil
}

// Inspect reads what the metadata directory of cfg holds without changing
// it (beyond what opening it for a start changes: a torn tail is cut).
func Inspect(fsys storage.FS, cfg Config, logger zerolog.Logger) (*State, error) {
	nd, boot, err := open(fsys, cfg, logger)
	if err != nil {
		return nil, err
	}
	defer nd.Close()
	return inspect(nd, boot, cfg, false)
}

func inspect(nd *storage.NodeDir, boot []metadata.Record, cfg Config, anyNode bool) (*State, error) {
	log := nd.Log
	s := &State{Dir: nd.Dir(), ClusterID: nd.Meta.ClusterID, NodeID: nd.Meta.NodeID, DirectoryID: nd.Meta.DirectoryID,
		LogStart: log.StartOffset(), LogEnd: log.EndOffset(), LogEpoch: log.LastEpoch(), QuorumState: nd.QuorumState}
	s.Snapshot, s.HasSnapshot = log.LatestSnapshot()
	if s.HasSnapshot {
		if err := s.readSnapshot(log); err != nil {
			return nil, err
		}
	}
	if s.MetadataVersion == 0 {
		s.MetadataVersion = metadataVersionOf(boot, 0)
	}
	if err := s.walkLog(log); err != nil {
		return nil, err
	}
	if s.Voters == nil {
		if len(cfg.StaticVoters) == 0 && !anyNode {
			return nil, fmt.Errorf("%w: %s holds no VotersRecord and controller.quorum.voters is empty", ErrNoVoters, s.Dir)
		}
		s.Voters, s.VotersFrom = slices.Sorted(slices.Values(cfg.StaticVoters)), "controller.quorum.voters"
	}
	if !anyNode && !slices.Contains(s.Voters, cfg.NodeID) {
		return s, fmt.Errorf("%w: node.id %d is not in the voter set %v (%s); run recover on a voter's directory and configuration",
			ErrNotVoter, cfg.NodeID, s.Voters, s.VotersFrom)
	}
	return s, nil
}

// readSnapshot takes the snapshot's header (voters, kraft.version) and its
// metadata.version; a snapshot holds only committed records, so its end
// is committed.
func (s *State) readSnapshot(log *storage.Log) error {
	r, err := log.OpenSnapshot(s.Snapshot)
	if err != nil {
		return err
	}
	var recs []metadata.Record
	info, err := metadata.ReadSnapshot(bufio.NewReaderSize(&snapshotStream{r: r}, 1<<20), func(rec metadata.Record) error {
		if f, ok := rec.(*metadata.FeatureLevelRecord); ok {
			recs = append(recs, f)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("recovery: snapshot %s: %w", s.Snapshot.FileName(), err)
	}
	s.MetadataVersion = metadataVersionOf(recs, 0)
	if info.Voters != nil || info.KRaftVersion != 0 {
		s.KRaftVersion = info.KRaftVersion
	}
	if info.Voters != nil {
		s.Voters, s.VotersFrom = voterIDs(info.Voters), "snapshot "+s.Snapshot.FileName()
	}
	if s.Snapshot.EndOffset > 0 {
		s.Committed, s.CommittedWhy = s.Snapshot.EndOffset, "the end of snapshot "+s.Snapshot.FileName()
	}
	return nil
}

// snapshotStream reads a snapshot from its start through SnapshotReader.
type snapshotStream struct {
	r   *storage.SnapshotReader
	pos int64
}

func (st *snapshotStream) Read(p []byte) (int, error) {
	if st.pos >= st.r.Size() {
		return 0, io.EOF
	}
	data, err := st.r.ReadAt(st.pos, len(p))
	if err != nil {
		return 0, err
	}
	if len(data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, data)
	st.pos += int64(n)
	return n, nil
}

// walkLog reads every batch after the snapshot: control records for the
// voter set and kraft.version, FeatureLevelRecords for metadata.version,
// and the newest epoch holding a metadata record. A leader writes metadata
// records only once a record of its own epoch committed (kraftd's
// maybeActivate; Apache's controller claims leadership only then too), so
// everything before that epoch's first batch, and that batch, committed.
func (s *State) walkLog(log *storage.Log) error {
	var scan batch.Scanner
	dataEpoch := int32(-1)
	for next := max(s.LogStart, s.Snapshot.EndOffset); next < s.LogEnd; {
		raw, err := log.Read(next, 1<<20)
		if err != nil {
			return fmt.Errorf("recovery: reading the log at %d: %w", next, err)
		}
		if len(raw) == 0 {
			break
		}
		_, err = batch.Walk(raw, func(h batch.Header, one []byte) error {
			next = h.NextOffset()
			if !h.IsControl() {
				dataEpoch = h.PartitionLeaderEpoch
			}
			_, err := scan.Scan(one, func(r batch.Record) error { return s.record(h, r) })
			return err
		})
		if err != nil {
			return fmt.Errorf("recovery: %s at offset %d: %w", s.Dir, next, err)
		}
	}
	if dataEpoch < 0 {
		return nil
	}
	for _, e := range log.EpochEntries() {
		if e.Epoch == dataEpoch && e.StartOffset+1 > s.Committed {
			s.Committed = e.StartOffset + 1
			s.CommittedWhy = fmt.Sprintf("epoch %d's leader wrote metadata records, which it does only once its first batch (offset %d) committed",
				dataEpoch, e.StartOffset)
		}
	}
	return nil
}

func (s *State) record(h batch.Header, r batch.Record) error {
	offset := h.BaseOffset + int64(r.OffsetDelta)
	if !h.IsControl() {
		rec, err := metadata.DecodeValue(r.Value)
		if err != nil {
			return err
		}
		s.MetadataVersion = metadataVersionOf([]metadata.Record{rec}, s.MetadataVersion)
		return nil
	}
	v, err := metadata.DecodeControl(r.Key, r.Value)
	if errors.Is(err, metadata.ErrNotKRaftControl) {
		return nil
	}
	if err != nil {
		return err
	}
	switch v := v.(type) {
	case *metadata.KRaftVersionRecord:
		s.KRaftVersion = v.KRaftVersion
	case *metadata.VotersRecord:
		s.Voters, s.VotersFrom = voterIDs(v), fmt.Sprintf("VotersRecord at offset %d", offset)
	}
	return nil
}

// metadataVersionOf is the last metadata.version level recs set, else was.
func metadataVersionOf(recs []metadata.Record, was int16) int16 {
	for _, rec := range recs {
		if f, ok := rec.(*metadata.FeatureLevelRecord); ok && f.Name == "metadata.version" {
			was = f.FeatureLevel
		}
	}
	return was
}

func voterIDs(r *metadata.VotersRecord) []int32 {
	ids := []int32{}
	for _, v := range r.Voters {
		ids = append(ids, v.VoterId)
	}
	slices.Sort(ids)
	return ids
}

// EpochJump is how far above the lost quorum's newest epoch the recovered
// one starts: old voters that come back elect at most one epoch per
// election, so they cannot reach it, and any exchange with the recovered
// node moves them into its epoch. It stays below the 2^20 epochs by which
// a node's quorum-state may lead its log before start-up warns of a
// forged epoch (node/epoch_check.go): an old voter that took the new epoch
// and restarts before fetching must not warn.
const EpochJump = 1_000_000

// newEpoch is the epoch the recovered quorum-state holds.
func newEpoch(old int32) (int32, error) {
	if old > math.MaxInt32-2*EpochJump {
		return 0, fmt.Errorf("recovery: epoch %d leaves no room for a jump of %d", old, EpochJump)
	}
	return old + EpochJump, nil
}
