package storage

import (
	"io"
	"path/filepath"
	"slices"
)

// LogFiles is what a metadata log directory holds, found without locking
// it or changing a file (OpenLog would recover the tail, ListSnapshots
// removes leftovers), so it is safe beside a running node: for tools such
// as the metadata shell.
type LogFiles struct {
	fs FS
	// Dir is the partition directory, __cluster_metadata-0.
	Dir string
	// Snapshot is the newest frozen snapshot, when HasSnapshot.
	Snapshot    SnapshotID
	HasSnapshot bool
	// Segments are the base offsets of the .log segments, ascending.
	Segments []int64
}

// ListLogFiles lists the snapshots and segments of dir, a metadata.log.dir
// or its __cluster_metadata-0 directory.
func ListLogFiles(fsys FS, dir string) (*LogFiles, error) {
	partition := filepath.Join(dir, MetadataLogDirName)
	switch ok, err := exists(fsys, partition); {
	case err != nil:
		return nil, err
	case ok:
		dir = partition
	}
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	lf := &LogFiles{fs: fsys, Dir: dir}
	for _, name := range names {
		if base, ok := parseSegmentName(name, logSuffix); ok {
			lf.Segments = append(lf.Segments, base)
		}
		id, kind, ok := parseSnapshotName(name)
		if ok && kind == snapshotFrozen && (!lf.HasSnapshot || compareSnapshotIDs(id, lf.Snapshot) > 0) {
			lf.Snapshot, lf.HasSnapshot = id, true
		}
	}
	slices.Sort(lf.Segments)
	return lf, nil
}

// OpenSnapshot opens the newest snapshot for reading from its start.
func (lf *LogFiles) OpenSnapshot() (io.ReadCloser, error) {
	return openSection(lf.fs, filepath.Join(lf.Dir, lf.Snapshot.FileName()))
}

// OpenSegment opens the segment with base offset base for reading from
// its start; the bytes end where the file ends, torn tail included.
func (lf *LogFiles) OpenSegment(base int64) (io.ReadCloser, error) {
	return openSection(lf.fs, filepath.Join(lf.Dir, segmentName(base, logSuffix)))
}

// SegmentName is the file name of the segment with base offset base.
func SegmentName(base int64) string { return segmentName(base, logSuffix) }

type section struct {
	*io.SectionReader
	io.Closer
}

func openSection(fsys FS, path string) (io.ReadCloser, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return section{io.NewSectionReader(f, 0, st.Size()), f}, nil
}
