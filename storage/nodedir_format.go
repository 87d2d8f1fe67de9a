package storage

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/kraftd/kraftd/storage/uuid"
)

// NodeDirFormat is what FormatNodeDir writes into a log directory, as
// `kafka-storage.sh format` does.
type NodeDirFormat struct {
	ClusterID string
	NodeID    int32
	// BootstrapCheckpoint is bootstrap.checkpoint's bytes
	// (metadata.EncodeBootstrap).
	BootstrapCheckpoint []byte
	// BootstrapSnapshot, for the metadata directory of a dynamic quorum's
	// initial voter, is the bootstrap snapshot
	// 00000000000000000000-0000000000.checkpoint holding the KRaftVersion
	// and Voters records. Nil for a static quorum, a node that joins later,
	// and data directories.
	BootstrapSnapshot []byte
	// DirectoryID is meta.properties' directory.id (the node's entry in the
	// bootstrap snapshot's voter set when it has one); a random id when
	// zero.
	DirectoryID uuid.UUID
	// Now dates meta.properties.
	Now time.Time
}

// IsFormatted reports whether dir holds meta.properties.
func IsFormatted(fsys FS, dir string) (bool, error) {
	return exists(fsys, filepath.Join(dir, MetaPropertiesName))
}

// FormatNodeDir formats dir (created if needed): bootstrap.checkpoint,
// the bootstrap snapshot when f has one, then meta.properties last,
// each written durably, so a directory is formatted only once everything
// else is on disk. It refuses a formatted directory with ErrFormatted.
func FormatNodeDir(fsys FS, dir string, f NodeDirFormat) error {
	switch formatted, err := IsFormatted(fsys, dir); {
	case err != nil:
		return err
	case formatted:
		return fmt.Errorf("%w: %s", ErrFormatted, dir)
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := WriteFileAtomic(fsys, filepath.Join(dir, BootstrapCheckpointName), f.BootstrapCheckpoint); err != nil {
		return err
	}
	if f.BootstrapSnapshot != nil {
		partition := filepath.Join(dir, MetadataLogDirName)
		if err := fsys.MkdirAll(partition, 0o755); err != nil {
			return err
		}
		if err := WriteFileAtomic(fsys, filepath.Join(partition, BootstrapSnapshotID.FileName()), f.BootstrapSnapshot); err != nil {
			return err
		}
	}
	dirID := f.DirectoryID
	if dirID == uuid.Zero {
		var err error
		if dirID, err = uuid.Random(nil); err != nil {
			return err
		}
	}
	// A directory formatted anew has never started, whatever ran in it
	// before meta.properties was removed; the rename below syncs this.
	if err := fsys.Remove(filepath.Join(dir, LogStartedName)); err != nil && !isNotExist(err) {
		return err
	}
	mp := MetaProperties{Version: 1, ClusterID: f.ClusterID, NodeID: f.NodeID, DirectoryID: dirID}
	return WriteMetaProperties(fsys, filepath.Join(dir, MetaPropertiesName), mp, f.Now)
}
