package storage

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/rs/zerolog"
)

// LogStartedName is the file OpenNodeDir leaves in a metadata.log.dir once
// the metadata log in it is on disk. It is how a directory whose log was
// lost (deleted, or a disk swapped under a kept meta.properties) is told
// apart from a freshly formatted one, which has no log either: a formatted
// directory has no such file, whether kraftd or Apache's kafka-storage.sh
// formatted it, so its first start goes ahead and writes the file. Apache
// has no such file and ignores it (it reads only meta.properties and the
// partition directories there).
const LogStartedName = "kraftd-log-started"

// ErrLostLog means a directory whose node has run holds no metadata log:
// starting would serve, and in a quorum vote, with an empty log as if the
// acknowledged records had never been written. NodeDirConfig.AcceptLostLog
// opens it anyway.
var ErrLostLog = errors.New("storage: metadata log lost")

// checkLostLog refuses, with ErrLostLog, a directory that has
// LogStartedName but no log in __cluster_metadata-0, unless accept.
func (d *NodeDir) checkLostLog(accept bool, logger zerolog.Logger) error {
	started, err := exists(d.fs, filepath.Join(d.dir, LogStartedName))
	if err != nil || !started {
		return err
	}
	has, err := holdsLog(d.fs, d.partition())
	if err != nil || has {
		return err
	}
	lost := fmt.Errorf("%w: %s has run a node (it holds %s), but %s holds no log segment and no snapshot",
		ErrLostLog, d.dir, LogStartedName, d.partition())
	if !accept {
		return lost
	}
	logger.Warn().Err(lost).Msg("starting with an empty metadata log, as configured (accept lost log)")
	return nil
}

// holdsLog reports whether a partition directory has a segment or a
// snapshot other than the bootstrap one. A live log always has a segment,
// except for a moment while ResetTo replaces all of them, and then the
// snapshot it resets to is already there.
func holdsLog(fsys FS, partition string) (bool, error) {
	names, err := fsys.ReadDir(partition)
	if isNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if _, ok := parseSegmentName(n, logSuffix); ok {
			return true, nil
		}
		if id, kind, ok := parseSnapshotName(n); ok && kind == snapshotFrozen && id != BootstrapSnapshotID {
			return true, nil
		}
	}
	return false, nil
}

// markStarted writes LogStartedName, durably, if it is not there yet. The
// log must be durable first (OpenLog syncs its directory), so that a crash
// never leaves the file without the log; syncing the metadata.log.dir for
// the file also makes the partition directory's own entry durable.
func (d *NodeDir) markStarted() error {
	name := filepath.Join(d.dir, LogStartedName)
	switch ok, err := exists(d.fs, name); {
	case err != nil:
		return err
	case ok:
		return nil
	}
	body := "# kraftd has opened the metadata log in this directory. While this file\n" +
		"# exists, kraftd refuses to start if " + MetadataLogDirName + " holds no log.\n"
	return WriteFileAtomic(d.fs, name, []byte(body))
}
