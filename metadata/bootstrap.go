package metadata

import (
	"fmt"

	"github.com/kraftd/kraftd/storage/uuid"
)

// Bootstrap is what `format` leaves in a metadata.log.dir for a node's first
// start, as Apache's BootstrapMetadata and the bootstrap snapshot hold it.
// Package storage writes and reads the files as bytes; this type is their
// content.
type Bootstrap struct {
	// Records are bootstrap.checkpoint's records (FeatureLevelRecords, then
	// any SCRAM credentials) or, for Apache 4.4's layout that has no such
	// file, the bootstrap snapshot's; nil when neither has any.
	Records []Record
	// KRaftVersion is the bootstrap snapshot's kraft.version, 0 without one.
	KRaftVersion int16
	// Voters is the bootstrap snapshot's voter set (a dynamic quorum's
	// initial voters); nil for a static quorum.
	Voters *VotersRecord
}

// EncodeBootstrap lays b out as the two files format writes, timestamped
// ms: bootstrap.checkpoint, and the bootstrap snapshot (nil unless
// b.Voters is set) holding KRaftVersion and Voters records.
func EncodeBootstrap(b Bootstrap, ms int64) (checkpoint, snapshot []byte) {
	checkpoint = EncodeSnapshotFile(SnapshotFile{Records: b.Records}, ms)
	if b.Voters != nil {
		snapshot = EncodeSnapshotFile(SnapshotFile{
			LastContainedLogTimestamp: ms,
			Extra:                     []ControlValue{&KRaftVersionRecord{KRaftVersion: b.KRaftVersion}, b.Voters},
		}, ms)
	}
	return checkpoint, snapshot
}

// DirectoryID is the directory id b.Voters gives node, zero when it names
// none (a static quorum, or a node that joins later).
func (b Bootstrap) DirectoryID(node int32) uuid.UUID {
	if b.Voters != nil {
		for _, v := range b.Voters.Voters {
			if v.VoterId == node {
				return v.VoterDirectoryId
			}
		}
	}
	return uuid.Zero
}

// DecodeBootstrap reads back the files EncodeBootstrap (or Apache's format)
// wrote: checkpoint is bootstrap.checkpoint's bytes and snapshot the
// bootstrap snapshot's, each nil when the file is absent; a decoding error
// is prefixed with the path of the file it concerns.
func DecodeBootstrap(checkpointPath string, checkpoint []byte, snapshotPath string, snapshot []byte) (Bootstrap, error) {
	var b Bootstrap
	if checkpoint != nil {
		f, err := DecodeSnapshotFile(checkpoint)
		if err != nil {
			return b, fmt.Errorf("%s: %w", checkpointPath, err)
		}
		b.Records = f.Records
	}
	if snapshot == nil {
		return b, nil
	}
	f, err := DecodeSnapshotFile(snapshot)
	if err != nil {
		return b, fmt.Errorf("%s: %w", snapshotPath, err)
	}
	if len(b.Records) == 0 {
		// Apache 4.4 writes no bootstrap.checkpoint: the feature levels
		// travel in the bootstrap snapshot instead.
		b.Records = f.Records
	}
	for _, v := range f.Extra {
		switch v := v.(type) {
		case *KRaftVersionRecord:
			b.KRaftVersion = v.KRaftVersion
		case *VotersRecord:
			b.Voters = v
		}
	}
	return b, nil
}
