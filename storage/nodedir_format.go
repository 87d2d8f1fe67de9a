package storage

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/uuid"
)

// NodeDirFormat is what FormatNodeDir writes into a log directory, as
// `kafka-storage.sh format` does.
type NodeDirFormat struct {
	ClusterID string
	NodeID    int32
	// Bootstrap are the records of bootstrap.checkpoint (FeatureLevelRecords).
	Bootstrap []metadata.Record
	// Voters, for the metadata directory of a dynamic quorum's initial
	// voter, is the initial voter set: FormatNodeDir then also writes the
	// bootstrap snapshot 00000000000000000000-0000000000.checkpoint
	// holding KRaftVersion and Voters records, and takes this node's
	// directory.id from its entry. Nil for a static quorum, a node that
	// joins later, and data directories.
	Voters *metadata.VotersRecord
	// KRaftVersion is the bootstrap snapshot's kraft.version (with Voters).
	KRaftVersion int16
	// DirectoryID is meta.properties' directory.id when Voters does not
	// name this node; a random id when zero.
	DirectoryID uuid.UUID
	// Now dates meta.properties and timestamps the bootstrap files.
	Now time.Time
}

// IsFormatted reports whether dir holds meta.properties.
func IsFormatted(fsys FS, dir string) (bool, error) {
	return exists(fsys, filepath.Join(dir, MetaPropertiesName))
}

// FormatNodeDir formats dir (created if needed): bootstrap.checkpoint,
// the bootstrap snapshot when f.Voters is set, then meta.properties last,
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
	ms := f.Now.UnixMilli()
	checkpoint := metadata.EncodeSnapshotFile(metadata.SnapshotFile{Records: f.Bootstrap}, ms)
	if err := WriteFileAtomic(fsys, filepath.Join(dir, BootstrapCheckpointName), checkpoint); err != nil {
		return err
	}
	dirID := f.DirectoryID
	if f.Voters != nil {
		for _, v := range f.Voters.Voters {
			if v.VoterId == f.NodeID {
				dirID = v.VoterDirectoryId
			}
		}
		if err := writeBootstrapSnapshot(fsys, dir, f.Voters, f.KRaftVersion, ms); err != nil {
			return err
		}
	}
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

// writeBootstrapSnapshot writes the local-only snapshot 0-0 that holds the
// initial voter set of a dynamic quorum.
func writeBootstrapSnapshot(fsys FS, dir string, voters *metadata.VotersRecord, kraftVersion int16, ms int64) error {
	file := metadata.EncodeSnapshotFile(metadata.SnapshotFile{
		LastContainedLogTimestamp: ms,
		Extra:                     []metadata.ControlValue{&metadata.KRaftVersionRecord{KRaftVersion: kraftVersion}, voters},
	}, ms)
	partition := filepath.Join(dir, MetadataLogDirName)
	if err := fsys.MkdirAll(partition, 0o755); err != nil {
		return err
	}
	return WriteFileAtomic(fsys, filepath.Join(partition, BootstrapSnapshotID.FileName()), file)
}
