package node

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/uuid"
)

// PartitionDir is the metadata log's directory inside metadata.log.dir.
const PartitionDir = storage.MetadataLogDirName

// Disk is a formatted metadata.log.dir, locked for this process: a thin
// layer over storage.NodeDir that speaks the quorum core's types.
type Disk struct {
	fs   storage.FS
	node *storage.NodeDir

	Meta      storage.MetaProperties
	Bootstrap []metadata.Record
	HardState quorum.HardState
	Log       *storage.Log
}

// DiskConfig names a node's metadata.log.dir and how to open it.
type DiskConfig struct {
	Dir          string // metadata.log.dir
	NodeID       int32
	SegmentBytes int64 // metadata.log.segment.bytes; 0 takes storage's default
	// IndexBytes is the preallocated size of the active segment's index
	// files; 0 takes Apache's 10 MiB.
	IndexBytes int
	// TruncateCorruptLog cuts the log at damage before its active segment
	// instead of refusing to open (storage.LogConfig.TruncateCorrupt).
	TruncateCorruptLog bool
	// AcceptLostLog opens a directory whose log was lost with an empty
	// log instead of refusing (storage.NodeDirConfig.AcceptLostLog).
	AcceptLostLog bool
}

// SettingError names the configuration key a directory contradicts, so
// start-up can say exactly what to fix.
type SettingError struct {
	Key string
	Err error
}

func (e *SettingError) Error() string { return fmt.Sprintf("config %s: %v", e.Key, e.Err) }

func (e *SettingError) Unwrap() error { return e.Err }

// OpenDisk locks and opens cfg's metadata.log.dir (storage.OpenNodeDir).
// It refuses a directory that is not formatted, whose node.id differs from
// the configuration, whose log was lost (storage.ErrLostLog) or is corrupt
// before its active segment (storage.ErrCorruptLog), unless cfg says to go
// on, and one whose quorum-state holds quorum.LastEpoch (ErrNoEpochLeft).
func OpenDisk(fsys storage.FS, cfg DiskConfig, log zerolog.Logger) (*Disk, error) {
	nd, err := storage.OpenNodeDir(fsys, cfg.Dir, storage.NodeDirConfig{
		NodeID:        cfg.NodeID,
		Log:           storage.LogConfig{SegmentBytes: cfg.SegmentBytes, MaxIndexBytes: cfg.IndexBytes, TruncateCorrupt: cfg.TruncateCorruptLog},
		AcceptLostLog: cfg.AcceptLostLog,
	}, log)
	switch {
	case errors.Is(err, storage.ErrNotFormatted):
		return nil, fmt.Errorf("%s is not formatted: run kraftd format", cfg.Dir)
	case errors.Is(err, storage.ErrWrongNode):
		return nil, &SettingError{Key: "node.id", Err: err}
	case err != nil:
		return nil, err
	}
	b := nd.Bootstrap
	boot, err := metadata.DecodeBootstrap(b.CheckpointPath, b.Checkpoint, b.SnapshotPath, b.Snapshot)
	if err != nil {
		nd.Close()
		return nil, err
	}
	d := &Disk{fs: fsys, node: nd, Meta: nd.Meta, Bootstrap: boot.Records, Log: nd.Log}
	if len(d.Bootstrap) == 0 {
		// Apache uses the latest production metadata.version when no
		// bootstrap records exist.
		d.Bootstrap = []metadata.Record{&metadata.FeatureLevelRecord{Name: controller.MetadataVersionFeature, FeatureLevel: controller.LatestMetadataVersion}}
	}
	qs := nd.QuorumState
	d.HardState = quorum.HardState{LeaderID: qs.LeaderID, LeaderEpoch: qs.LeaderEpoch, VotedID: qs.VotedID, VotedDirectoryID: qs.VotedDirectoryID}
	if err := d.cutEpochsBeyondQuorumState(log); err != nil {
		nd.Close()
		return nil, err
	}
	if err := d.checkQuorumStateEpoch(log); err != nil {
		nd.Close()
		return nil, err
	}
	return d, nil
}

// cutEpochsBeyondQuorumState drops batches whose leader epoch is above the
// epoch in quorum-state. This node writes quorum-state before any batch of
// a new epoch (as a candidate, leader or follower), so such a batch was
// never written as it reads: its epoch field, which the batch CRC does not
// cover, was torn or flipped in the unsynced tail. Left in place, the core
// would jump to that epoch, and followers would copy it. Without a
// quorum-state file (lost, or never written) the log is trusted, as Apache
// does.
func (d *Disk) cutEpochsBeyondQuorumState(log zerolog.Logger) error {
	epoch := d.HardState.LeaderEpoch
	if d.Log.LastEpoch() <= epoch {
		return nil
	}
	if _, err := d.fs.Stat(filepath.Join(d.node.Dir(), storage.MetadataLogDirName, storage.QuorumStateName)); err != nil {
		return nil
	}
	end, _ := d.Log.EndOffsetForEpoch(epoch)
	end = max(end, d.Log.StartOffset())
	log.Warn().Int32("quorum_state_epoch", epoch).Int32("log_epoch", d.Log.LastEpoch()).Int64("offset", end).
		Msg("the log ends with batches of an epoch quorum-state never reached: cutting the torn tail there")
	return d.Log.TruncateTo(end)
}

// WriteHardState writes quorum-state durably, in the data version that the
// quorum's kraft.version calls for: version 0 lists the voters and has no
// voted directory id, version 1 the reverse (Apache's ElectionState).
func (d *Disk) WriteHardState(hs quorum.HardState, kraftVersion int16, voters []int32) error {
	qs := storage.QuorumState{LeaderID: hs.LeaderID, LeaderEpoch: hs.LeaderEpoch, VotedID: hs.VotedID, DataVersion: kraftVersion}
	if kraftVersion == 0 {
		qs.CurrentVoters = slices.Sorted(slices.Values(voters))
	} else {
		qs.VotedDirectoryID = uuid.UUID(hs.VotedDirectoryID)
	}
	return d.node.WriteQuorumState(qs)
}

// LoadSnapshot streams snapshot id from disk into a new image.
func (d *Disk) LoadSnapshot(id storage.SnapshotID) (*metadata.Image, metadata.SnapshotInfo, error) {
	r, err := d.Log.OpenSnapshot(id)
	if err != nil {
		return nil, metadata.SnapshotInfo{}, err
	}
	defer r.Close()
	im, info, err := metadata.LoadSnapshot(readSnapshot(r))
	if err != nil {
		return nil, info, fmt.Errorf("snapshot %s: %w", id, err)
	}
	return im, info, nil
}

// Close flushes and closes the log and releases the directory lock.
func (d *Disk) Close() error { return d.node.Close() }

// QuorumLog adapts the storage log to the quorum core's read interface.
func (d *Disk) QuorumLog() quorum.Log { return quorumLog{d.Log} }

type quorumLog struct{ *storage.Log }

// LatestSnapshot leaves out the bootstrap snapshot 0-0: it holds only what
// this node was formatted with, and Apache never serves it to a fetcher.
func (l quorumLog) LatestSnapshot() (quorum.SnapshotID, bool) {
	id, ok := l.Log.LatestSnapshot()
	if !ok || id == storage.BootstrapSnapshotID {
		return quorum.SnapshotID{}, false
	}
	return quorum.SnapshotID{EndOffset: id.EndOffset, Epoch: id.Epoch}, true
}

// EarliestSnapshot includes the bootstrap snapshot, as Apache's
// earliestSnapshotId does.
func (l quorumLog) EarliestSnapshot() (quorum.SnapshotID, bool) {
	id, ok := l.Log.EarliestSnapshot()
	return quorum.SnapshotID{EndOffset: id.EndOffset, Epoch: id.Epoch}, ok
}

func (l quorumLog) ReadSnapshot(id quorum.SnapshotID, pos int64, maxBytes int) ([]byte, int64, error) {
	r, err := l.Log.OpenSnapshot(storage.SnapshotID{EndOffset: id.EndOffset, Epoch: id.Epoch})
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	data, err := r.ReadAt(pos, maxBytes)
	return data, r.Size(), err
}
