package recovery

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
	"github.com/kraftd/kraftd/storage/uuid"
)

// mvKRaftVersion1 is metadata.version 3.9-IV0, the first that allows
// kraft.version 1 (Apache refuses the upgrade below it).
const mvKRaftVersion1 = 21

// ErrStaticVoters: a static quorum below metadata.version 3.9-IV0 cannot
// become dynamic, and controller.quorum.voters still names lost voters.
var ErrStaticVoters = errors.New("recovery: controller.quorum.voters must name this node alone")

// Result is what Recover wrote.
type Result struct {
	// Epoch is the recovered quorum-state's epoch; the node leads Epoch+1.
	Epoch int32
	// DirectoryID is the node's new directory.id, the one the recovered
	// VotersRecord names; zero when the quorum stays static.
	DirectoryID uuid.UUID
	// Converted says a static quorum became dynamic (kraft.version 1).
	Converted bool
	// Static says the quorum stays static (metadata.version below
	// 3.9-IV0): no control batch was written.
	Static bool
}

// Recover rewrites the metadata directory of cfg so that the node alone
// is the voter set, in an epoch EpochJump above the newest it knows. It
// returns what the directory held (also when it refuses) and what it
// wrote.
func Recover(fsys storage.FS, cfg Config, now time.Time, logger zerolog.Logger) (*State, *Result, error) {
	return recoverDir(fsys, cfg, now, logger, false)
}

// recoverDir is Recover; anyNode skips the check that the node is a voter
// (a directory built from a broker's copy).
func recoverDir(fsys storage.FS, cfg Config, now time.Time, logger zerolog.Logger, anyNode bool) (*State, *Result, error) {
	nd, boot, err := open(fsys, cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	defer nd.Close()
	s, err := inspect(nd, boot, cfg, anyNode)
	if err != nil {
		return s, nil, err
	}
	epoch, err := newEpoch(s.Epoch())
	if err != nil {
		return s, nil, err
	}
	res := &Result{Epoch: epoch}
	if s.KRaftVersion == 0 && s.MetadataVersion < mvKRaftVersion1 {
		// Too old to become dynamic: only the configuration can make the
		// node the sole voter, and it must say so before anything changes.
		if !slices.Equal(cfg.StaticVoters, []int32{cfg.NodeID}) {
			return s, nil, fmt.Errorf("%w: metadata.version level %d is below 3.9-IV0, so the quorum stays static; "+
				"set controller.quorum.voters to this node alone (%d@host:port) and run recover again", ErrStaticVoters, s.MetadataVersion, cfg.NodeID)
		}
		res.Static = true
		return s, res, nd.WriteQuorumState(storage.QuorumState{LeaderID: -1, LeaderEpoch: epoch, VotedID: -1, CurrentVoters: []int32{cfg.NodeID}})
	}
	if len(cfg.Endpoints) == 0 {
		return s, nil, errors.New("recovery: no controller listener in listeners/advertised.listeners (controller.listener.names) for the VotersRecord")
	}
	res.DirectoryID = uuid.MustRandom()
	res.Converted = s.KRaftVersion == 0
	var recs []batch.Record
	if res.Converted {
		recs = append(recs, controlRecord(&metadata.KRaftVersionRecord{KRaftVersion: 1}))
	}
	recs = append(recs, controlRecord(soleVoter(cfg, res.DirectoryID)))
	// The batch first: quorum-state and meta.properties follow it, and a
	// crash between them leaves a directory recover runs on again (it
	// finds the node by id and jumps from the batch's epoch).
	raw := batch.Builder{BaseOffset: s.LogEnd, LeaderEpoch: epoch, Timestamp: now.UnixMilli(), Control: true}.Encode(nil, recs)
	if err := nd.Log.Append(raw); err != nil {
		return s, nil, err
	}
	if err := nd.Log.Sync(); err != nil {
		return s, nil, err
	}
	if err := nd.WriteQuorumState(storage.QuorumState{LeaderID: -1, LeaderEpoch: epoch, VotedID: -1, DataVersion: 1}); err != nil {
		return s, nil, err
	}
	meta := nd.Meta
	meta.DirectoryID = res.DirectoryID
	return s, res, storage.WriteMetaProperties(fsys, filepath.Join(nd.Dir(), storage.MetaPropertiesName), meta, now)
}

// soleVoter is the VotersRecord of the recovered quorum.
func soleVoter(cfg Config, dir uuid.UUID) *metadata.VotersRecord {
	return &metadata.VotersRecord{Voters: []metadata.VotersRecordVoter{{
		VoterId:             cfg.NodeID,
		VoterDirectoryId:    dir,
		Endpoints:           slices.Clone(cfg.Endpoints),
		KRaftVersionFeature: metadata.VotersRecordKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1},
	}}}
}

func controlRecord(v metadata.ControlValue) batch.Record {
	key, value := metadata.EncodeControl(v)
	return batch.Record{Key: key, Value: value}
}
