package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/rs/zerolog"
)

// BootstrapCheckpointName is the file `format` writes into every log
// directory: a snapshot-format file of the bootstrap FeatureLevelRecords.
const BootstrapCheckpointName = "bootstrap.checkpoint"

var (
	// ErrNotFormatted means a directory has no meta.properties.
	ErrNotFormatted = errors.New("storage: directory is not formatted")
	// ErrFormatted means a directory to format already has meta.properties.
	ErrFormatted = errors.New("storage: directory is already formatted")
	// ErrWrongNode means a directory was formatted for another node.id.
	ErrWrongNode = errors.New("storage: wrong node.id")
)

// NodeDir is a node's formatted metadata.log.dir, open and locked for this
// process: its identity, the bootstrap files `format` left in it, the
// quorum-state, and the metadata log.
type NodeDir struct {
	fs     FS
	dir    string
	unlock func() error

	// Meta is the directory's meta.properties.
	Meta MetaProperties
	// Bootstrap holds the bootstrap files as bytes: their records are
	// package metadata's to decode (metadata.DecodeBootstrap).
	Bootstrap BootstrapFiles
	// QuorumState is the quorum-state file, or no leader and no vote
	// (LeaderID and VotedID -1) when there is none yet.
	QuorumState QuorumState
	// Log is the metadata log, __cluster_metadata-0.
	Log *Log
}

// BootstrapFiles are the files `format` leaves for a node's first start,
// read whole.
type BootstrapFiles struct {
	// CheckpointPath is bootstrap.checkpoint's path, Checkpoint its bytes
	// (nil when absent).
	CheckpointPath string
	Checkpoint     []byte
	// SnapshotPath is the bootstrap snapshot's path (BootstrapSnapshotID),
	// Snapshot its bytes (nil when absent): a dynamic quorum's initial
	// voters, or, in Apache 4.4's layout, the feature levels too.
	SnapshotPath string
	Snapshot     []byte
}

// NodeDirConfig says how OpenNodeDir opens a directory.
type NodeDirConfig struct {
	// NodeID is the configured node.id the directory must be formatted for.
	NodeID int32
	// Log configures the metadata log (OpenLog).
	Log LogConfig
	// AcceptLostLog opens a directory whose metadata log was lost
	// (ErrLostLog) with an empty log. Only an operator who has read that
	// error should set it.
	AcceptLostLog bool
}

// OpenNodeDir opens the metadata.log.dir dir: it reads meta.properties,
// refusing an unformatted directory (ErrNotFormatted) and one formatted
// for another node (ErrWrongNode), takes the directory lock (ErrLocked
// when another process holds it), refuses a directory whose node has run
// and whose log is gone (ErrLostLog, see LogStartedName), then reads the
// bootstrap files and quorum-state, opens (recovers) the log, and notes
// that this directory has started (LogStartedName).
func OpenNodeDir(fsys FS, dir string, cfg NodeDirConfig, logger zerolog.Logger) (*NodeDir, error) {
	nodeID := cfg.NodeID
	meta, err := ReadMetaProperties(fsys, filepath.Join(dir, MetaPropertiesName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no %s", ErrNotFormatted, dir, MetaPropertiesName)
	}
	if err != nil {
		return nil, err
	}
	if meta.NodeID != nodeID {
		return nil, fmt.Errorf("%w: %s was formatted for node %d, not node %d", ErrWrongNode, dir, meta.NodeID, nodeID)
	}
	d := &NodeDir{fs: fsys, dir: dir, Meta: meta}
	if d.unlock, err = LockDir(fsys, dir); err != nil {
		return nil, err
	}
	if err := d.open(cfg, logger); err != nil {
		if d.Log != nil {
			d.Log.Close()
		}
		d.unlock()
		return nil, err
	}
	return d, nil
}

func (d *NodeDir) open(cfg NodeDirConfig, logger zerolog.Logger) error {
	b := &d.Bootstrap
	b.CheckpointPath = filepath.Join(d.dir, BootstrapCheckpointName)
	b.SnapshotPath = filepath.Join(d.partition(), BootstrapSnapshotID.FileName())
	var err error
	if b.Checkpoint, err = readIfExists(d.fs, b.CheckpointPath); err != nil {
		return err
	}
	if err := d.checkLostLog(cfg.AcceptLostLog, logger); err != nil {
		return err
	}
	if d.Log, err = OpenLog(d.fs, d.partition(), cfg.Log, logger); err != nil {
		return err
	}
	if err := d.markStarted(); err != nil {
		return err
	}
	if b.Snapshot, err = readIfExists(d.fs, b.SnapshotPath); err != nil {
		return err
	}
	d.QuorumState, err = ReadQuorumState(d.fs, d.quorumStatePath())
	if errors.Is(err, fs.ErrNotExist) {
		d.QuorumState, err = QuorumState{LeaderID: -1, VotedID: -1}, nil
	}
	return err
}

// readIfExists reads a whole small file; nil when absent.
func readIfExists(fsys FS, path string) ([]byte, error) {
	raw, err := readFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return raw, err
}

// Dir is the metadata.log.dir.
func (d *NodeDir) Dir() string { return d.dir }

func (d *NodeDir) partition() string { return filepath.Join(d.dir, MetadataLogDirName) }

func (d *NodeDir) quorumStatePath() string { return filepath.Join(d.partition(), QuorumStateName) }

// WriteQuorumState replaces quorum-state durably and remembers it.
func (d *NodeDir) WriteQuorumState(qs QuorumState) error {
	if err := WriteQuorumState(d.fs, d.quorumStatePath(), qs); err != nil {
		return err
	}
	d.QuorumState = qs
	return nil
}

// Close closes the log and releases the directory lock.
func (d *NodeDir) Close() error {
	err := d.Log.Close()
	if uerr := d.unlock(); err == nil {
		err = uerr
	}
	return err
}
