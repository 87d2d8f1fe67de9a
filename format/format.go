package format

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/uuid"
)

// Voter is one initial controller of a dynamic quorum, from --standalone
// or --initial-controllers.
type Voter struct {
	ID          int32
	Host        string
	Port        uint16
	DirectoryID uuid.UUID
	Listener    string
}

// FeatureLevels are the levels format bootstraps at metadata.version mv:
// each feature's default, then the --feature name=level values. The
// quorum flags call for kraftVersion, which a --feature kraft.version must
// match, and kraft.version 1 needs a metadata.version that knows it.
func FeatureLevels(mv, kraftVersion int16, features []string) (map[string]int16, error) {
	levels := controller.DefaultFeatureLevels(mv)
	for _, f := range features {
		name, value, ok := strings.Cut(f, "=")
		level, err := strconv.ParseInt(value, 10, 16)
		if !ok || err != nil {
			return nil, fmt.Errorf("--feature %q: want name=level", f)
		}
		switch name {
		case controller.MetadataVersionFeature:
			return nil, errors.New("--feature: set metadata.version with --release-version")
		case controller.KRaftVersionFeature:
			if int16(level) != kraftVersion {
				return nil, fmt.Errorf("--feature kraft.version=%d contradicts the quorum flags, which call for %d", level, kraftVersion)
			}
			continue
		}
		levels[name] = int16(level)
	}
	if kraftVersion == 1 && mv < controller.MVKRaftVersion1 {
		return nil, fmt.Errorf("kraft.version 1 needs metadata.version %s or newer", controller.MetadataVersionName(controller.MVKRaftVersion1))
	}
	return levels, nil
}

// Records are the FeatureLevelRecords of bootstrap.checkpoint:
// metadata.version first, then each other feature with a level above 0.
// The --add-scram credentials (ScramRecords) follow them in the same file,
// as Apache 4.1's format writes them (4.4 writes the same list into the
// bootstrap snapshot instead; kraftd reads either and writes 4.1's layout).
func Records(mv int16, levels map[string]int16) []metadata.Record {
	records := []metadata.Record{&metadata.FeatureLevelRecord{Name: controller.MetadataVersionFeature, FeatureLevel: mv}}
	names := make([]string, 0, len(levels))
	for name, level := range levels {
		if level > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		records = append(records, &metadata.FeatureLevelRecord{Name: name, FeatureLevel: levels[name]})
	}
	return records
}

// VotersRecord is the initial voter set of a dynamic quorum, which format
// writes into the bootstrap snapshot.
func VotersRecord(voters []Voter) *metadata.VotersRecord {
	set := &metadata.VotersRecord{}
	for _, v := range voters {
		set.Voters = append(set.Voters, metadata.VotersRecordVoter{
			VoterId:             v.ID,
			VoterDirectoryId:    v.DirectoryID,
			Endpoints:           []metadata.VotersRecordEndpoint{{Name: v.Listener, Host: v.Host, Port: v.Port}},
			KRaftVersionFeature: metadata.VotersRecordKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1},
		})
	}
	return set
}

// ParseInitialControllers reads --initial-controllers,
// `id@host:port:directoryId,...`, each at the controller listener.
func ParseInitialControllers(s, listener string) ([]Voter, error) {
	var out []Voter
	for _, entry := range strings.Split(s, ",") {
		id, rest, ok := strings.Cut(strings.TrimSpace(entry), "@")
		n, err := strconv.ParseInt(id, 10, 32)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not id@host:port:directoryId", entry)
		}
		i := strings.LastIndex(rest, ":")
		if i < 0 {
			return nil, fmt.Errorf("%q has no directory id", entry)
		}
		dirID, err := uuid.Parse(rest[i+1:])
		if err != nil {
			return nil, fmt.Errorf("%q: directory id: %v", entry, err)
		}
		host, port, err := splitHostPort(rest[:i])
		if err != nil {
			return nil, fmt.Errorf("%q: %v", entry, err)
		}
		if slices.ContainsFunc(out, func(v Voter) bool { return v.ID == int32(n) }) {
			return nil, fmt.Errorf("node %d is listed twice", n)
		}
		out = append(out, Voter{ID: int32(n), Host: host, Port: port, DirectoryID: dirID, Listener: listener})
	}
	return out, nil
}

func splitHostPort(s string) (string, uint16, error) {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return "", 0, errors.New("want host:port")
	}
	port, err := strconv.ParseUint(s[i+1:], 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q", s[i+1:])
	}
	return strings.Trim(s[:i], "[]"), uint16(port), nil
}

// Dir formats dir for node nodeID of cluster clusterID (storage.FormatNodeDir)
// with the bootstrap b: a metadata directory of a dynamic quorum's initial
// voter takes its directory.id from its entry of b.Voters, any other a
// random one.
func Dir(fsys storage.FS, dir, clusterID string, nodeID int32, b metadata.Bootstrap, now time.Time) error {
	f := storage.NodeDirFormat{ClusterID: clusterID, NodeID: nodeID, DirectoryID: b.DirectoryID(nodeID), Now: now}
	f.BootstrapCheckpoint, f.BootstrapSnapshot = metadata.EncodeBootstrap(b, now.UnixMilli())
	return storage.FormatNodeDir(fsys, dir, f)
}
