package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/kraftd/kraftd/storage/uuid"
)

// ErrMixedDirs means the log directories of one node were formatted for
// different clusters or nodes, or two of them share a directory.id (one
// was copied from the other).
var ErrMixedDirs = errors.New("storage: log directories do not belong together")

// MixedDirsError says which directory disagrees with which, and in what.
type MixedDirsError struct {
	// Field is what differs: "cluster.id", "node.id" or "directory.id".
	Field string
	// Dir holds Got; Want is what the node (or the first directory, Other)
	// holds.
	Dir, Other string
	Got, Want  string
}

func (e *MixedDirsError) Error() string {
	if e.Field == "directory.id" {
		return fmt.Sprintf("%s and %s have the same directory.id %s: one was copied from the other", e.Dir, e.Other, e.Got)
	}
	if e.Other == "" {
		return fmt.Sprintf("%s was formatted with %s %s, not %s", e.Dir, e.Field, e.Got, e.Want)
	}
	return fmt.Sprintf("%s was formatted with %s %s, but %s with %s", e.Dir, e.Field, e.Got, e.Other, e.Want)
}

func (e *MixedDirsError) Unwrap() error { return ErrMixedDirs }

// CheckDirsBelong reads meta.properties of every formatted directory of
// dirs and refuses (*MixedDirsError) two of different cluster ids, a
// node.id other than nodeID, or a directory.id seen twice, as Apache's
// MetaPropertiesEnsemble does at start and format. clusterID, when not
// "", is the cluster every directory must be of (format's --cluster-id);
// otherwise the first formatted directory's is. Unformatted directories
// are skipped. It reports the formatted directories' properties by
// directory.
func CheckDirsBelong(fsys FS, dirs []string, clusterID string, nodeID int32) (map[string]MetaProperties, error) {
	found := map[string]MetaProperties{}
	clusterOf := "" // the directory clusterID was read from; "" for the caller's
	seen := map[string]string{}
	for _, dir := range dirs {
		if _, done := found[dir]; done {
			continue
		}
		m, err := ReadMetaProperties(fsys, filepath.Join(dir, MetaPropertiesName))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		found[dir] = m
		switch {
		case m.ClusterID == "":
		case clusterID == "":
			clusterID, clusterOf = m.ClusterID, dir
		case m.ClusterID != clusterID:
			return nil, &MixedDirsError{Field: "cluster.id", Dir: dir, Other: clusterOf, Got: m.ClusterID, Want: clusterID}
		}
		if m.NodeID >= 0 && m.NodeID != nodeID {
			return nil, &MixedDirsError{Field: "node.id", Dir: dir, Got: fmt.Sprint(m.NodeID), Want: fmt.Sprint(nodeID)}
		}
		if id := m.DirectoryID.String(); m.DirectoryID != uuid.Zero {
			if other, dup := seen[id]; dup {
				return nil, &MixedDirsError{Field: "directory.id", Dir: dir, Other: other, Got: id}
			}
			seen[id] = dir
		}
	}
	return found, nil
}
