package server

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kraftd/kraftd/storage"
)

// AllLogDirs is metadata.log.dir first, then every other directory of
// log.dirs: all that format writes and start checks.
func (c *Config) AllLogDirs() []string {
	dirs := []string{c.MetadataLogDir}
	for _, d := range c.LogDirs {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// CheckLogDirs refuses, as a *ConfigError naming the key and the fix,
// log directories of this node formatted for different clusters or
// another node.id, or two with the same directory.id, as Apache does at
// start and at format. clusterID, when not "", is the cluster they must
// all be of (format's --cluster-id). kraftd keeps nothing in log.dirs,
// but a directory there of another cluster says that metadata.log.dir or
// log.dirs points at the wrong place.
func CheckLogDirs(fsys storage.FS, c *Config, clusterID string) error {
	_, err := storage.CheckDirsBelong(fsys, c.AllLogDirs(), clusterID, c.NodeID)
	var mixed *storage.MixedDirsError
	if !errors.As(err, &mixed) {
		return err
	}
	key := "log.dirs"
	if mixed.Dir == c.MetadataLogDir {
		key = "metadata.log.dir"
	}
	var fix string
	switch mixed.Field {
	case "node.id":
		key = "node.id"
		fix = "A directory belongs to one node: correct node.id if the directory moved with its node, or point " +
			"metadata.log.dir and log.dirs at this node's own directories"
	case "directory.id":
		fix = "Every directory needs its own identity: move the copy aside and format its place again with kraftd format --ignore-formatted"
	default:
		want := mixed.Want
		if clusterID != "" {
			fix = fmt.Sprintf("Format this node with the cluster id its directories already hold (%s), or point metadata.log.dir and log.dirs "+
				"at directories of cluster %s", mixed.Got, clusterID)
			break
		}
		fix = fmt.Sprintf("All of a node's directories are of one cluster, as Apache requires: point metadata.log.dir and log.dirs at this "+
			"node's own directories, or move %s aside and format its place again (kraftd format --ignore-formatted --cluster-id %s)", mixed.Dir, want)
	}
	return &ConfigError{Key: key, Err: fmt.Errorf("%v. %s", mixed, fix)}
}
