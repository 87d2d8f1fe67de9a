package recovery

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/uuid"
)

// ErrTargetFormatted: the directory to build from a broker's copy is
// already formatted.
var ErrTargetFormatted = errors.New("recovery: metadata.log.dir is already formatted")

// FromBrokerDir builds cfg's metadata directory from the __cluster_metadata
// copy a broker keeps in brokerDir (its metadata.log.dir), for when no
// controller survived: the segments and snapshots are copied (indexes and
// the epoch cache are rebuilt on open), meta.properties names the broker's
// cluster id and this node, and the result is rewritten as Recover does.
// The node need not be in the old voter set. The broker may keep running:
// with no controller left its metadata log does not change, and a torn
// tail of the copy is cut when it is opened.
func FromBrokerDir(fsys storage.FS, brokerDir string, cfg Config, now time.Time, logger zerolog.Logger) (*State, *Result, error) {
	bmeta, err := storage.ReadMetaProperties(fsys, filepath.Join(brokerDir, storage.MetaPropertiesName))
	if err != nil {
		return nil, nil, fmt.Errorf("recovery: --from-broker-dir %s: %w", brokerDir, err)
	}
	switch formatted, err := storage.IsFormatted(fsys, cfg.MetadataLogDir); {
	case err != nil:
		return nil, nil, err
	case formatted:
		return nil, nil, fmt.Errorf("%w: %s has a %s; point metadata.log.dir at an empty directory", ErrTargetFormatted, cfg.MetadataLogDir, storage.MetaPropertiesName)
	}
	src := filepath.Join(brokerDir, storage.MetadataLogDirName)
	dst := filepath.Join(cfg.MetadataLogDir, storage.MetadataLogDirName)
	if err := copyLogFiles(fsys, src, dst); err != nil {
		return nil, nil, err
	}
	meta := storage.MetaProperties{Version: 1, ClusterID: bmeta.ClusterID, NodeID: cfg.NodeID, DirectoryID: uuid.MustRandom()}
	metaPath := filepath.Join(cfg.MetadataLogDir, storage.MetaPropertiesName)
	if err := storage.WriteMetaProperties(fsys, metaPath, meta, now); err != nil {
		return nil, nil, err
	}
	s, res, err := recoverDir(fsys, cfg, now, logger, true)
	if err != nil && res == nil {
		// Unformatted again, so that the same command runs once the
		// cause is fixed.
		if rerr := fsys.Remove(metaPath); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return s, res, err
}

// copyLogFiles copies the segments, frozen snapshots and partition.metadata
// of a metadata partition directory, each synced, then the directory.
func copyLogFiles(fsys storage.FS, src, dst string) error {
	names, err := fsys.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("recovery: %s does not exist: is it a broker's metadata.log.dir?", src)
	}
	if err != nil {
		return err
	}
	if err := fsys.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	copied := 0
	for _, name := range names {
		if !strings.HasSuffix(name, ".log") && !strings.HasSuffix(name, ".checkpoint") && name != "partition.metadata" {
			continue
		}
		if err := copyFile(fsys, filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return err
		}
		copied++
	}
	if copied == 0 {
		return fmt.Errorf("recovery: %s holds no segment or snapshot", src)
	}
	return fsys.SyncDir(dst)
}

func copyFile(fsys storage.FS, from, to string) error {
	in, err := fsys.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := fsys.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.NewSectionReader(in, 0, st.Size())); err != nil {
		out.Close()
		return fmt.Errorf("recovery: copy %s: %w", from, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
