package server

import (
	"bufio"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

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

	Meta         storage.MetaProperties
	Bootstrap    []metadata.Record
	HardState    quorum.HardState
	KRaftVersion int16
	Log          *storage.Log
}

// OpenDisk locks and opens cfg's metadata.log.dir (storage.OpenNodeDir).
// It refuses a directory that is not formatted or whose node.id differs
// from the configuration.
func OpenDisk(fsys storage.FS, cfg *Config, log zerolog.Logger) (*Disk, error) {
	nd, err := storage.OpenNodeDir(fsys, cfg.MetadataLogDir, cfg.NodeID, storage.LogConfig{SegmentBytes: cfg.SegmentBytes}, log)
	switch {
	case errors.Is(err, storage.ErrNotFormatted):
		return nil, fmt.Errorf("%s is not formatted: run kraftd format", cfg.MetadataLogDir)
	case errors.Is(err, storage.ErrWrongNode):
		return nil, &ConfigError{Key: "node.id", Err: err}
	case err != nil:
		return nil, err
	}
	d := &Disk{fs: fsys, node: nd, Meta: nd.Meta, Bootstrap: nd.Bootstrap, KRaftVersion: nd.KRaftVersion, Log: nd.Log}
	if len(d.Bootstrap) == 0 {
		// Apache uses the latest production metadata.version when no
		// bootstrap records exist.
		d.Bootstrap = []metadata.Record{&metadata.FeatureLevelRecord{Name: controller.MetadataVersionFeature, FeatureLevel: controller.LatestMetadataVersion}}
	}
	qs := nd.QuorumState
	d.HardState = quorum.HardState{LeaderID: qs.LeaderID, LeaderEpoch: qs.LeaderEpoch, VotedID: qs.VotedID, VotedDirectoryID: qs.VotedDirectoryID}
	return d, nil
}

// InitialVoters is the voter set the quorum starts from: the static
// controller.quorum.voters, or the bootstrap snapshot's VotersRecord.
func (d *Disk) InitialVoters(cfg *Config) (map[int32][]quorum.Endpoint, int16, error) {
	out := map[int32][]quorum.Endpoint{}
	if len(cfg.Voters) > 0 {
		for _, v := range cfg.Voters {
			out[v.ID] = []quorum.Endpoint{{Name: cfg.ControllerListenerName[0], Host: v.Host, Port: v.Port}}
		}
		return out, 0, nil
	}
	if d.node.Voters == nil {
		return nil, 0, &ConfigError{Key: "controller.quorum.voters", Err: errors.New("is empty and the directory holds no initial voter set; joining a dynamic quorum as an observer is not supported yet")}
	}
	for _, v := range d.node.Voters.Voters {
		for _, e := range v.Endpoints {
			out[v.VoterId] = append(out[v.VoterId], quorum.Endpoint{Name: e.Name, Host: e.Host, Port: e.Port})
		}
	}
	return out, d.KRaftVersion, nil
}

// WriteHardState writes quorum-state durably, in the data version that the
// quorum's kraft.version calls for: version 0 lists the voters and has no
// voted directory id, version 1 the reverse (Apache's ElectionState).
func (d *Disk) WriteHardState(hs quorum.HardState, voters []int32) error {
	qs := storage.QuorumState{LeaderID: hs.LeaderID, LeaderEpoch: hs.LeaderEpoch, VotedID: hs.VotedID, DataVersion: d.KRaftVersion}
	if d.KRaftVersion == 0 {
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
	im, info, err := metadata.LoadSnapshot(bufio.NewReaderSize(&snapshotSource{r: r}, 1<<20))
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

func sortBrokers(b []kmsg.DescribeClusterResponseBroker) []kmsg.DescribeClusterResponseBroker {
	sort.Slice(b, func(i, j int) bool { return b[i].NodeID < b[j].NodeID })
	return b
}
