package storage

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Snapshot files (raft/.../snapshot/Snapshots.java): a frozen snapshot is
// "%020d-%010d.checkpoint" of its end offset and epoch. It is written as
// "<id>-<random>.checkpoint.part", fsynced and renamed; a snapshot being
// deleted is first renamed to "<id>.checkpoint.deleted".
const (
	snapshotSuffix        = ".checkpoint"
	snapshotPartialSuffix = ".checkpoint.part"
	snapshotDeletedSuffix = ".checkpoint.deleted"
)

// SnapshotID names a snapshot: EndOffset is one past the last offset it
// contains, Epoch the epoch of that last record.
type SnapshotID struct {
	EndOffset int64
	Epoch     int32
}

// BootstrapSnapshotID is 0-0, the snapshot `kafka-storage format` writes. It
// is local: never served by FetchSnapshot or named in a Fetch response.
var BootstrapSnapshotID = SnapshotID{0, 0}

// IsBootstrap reports whether id is the bootstrap snapshot 0-0.
func (id SnapshotID) IsBootstrap() bool { return id == BootstrapSnapshotID }

func (id SnapshotID) String() string { return fmt.Sprintf("%020d-%010d", id.EndOffset, id.Epoch) }

// FileName is the frozen snapshot's file name.
func (id SnapshotID) FileName() string { return id.String() + snapshotSuffix }

func compareSnapshotIDs(a, b SnapshotID) int {
	if a.EndOffset != b.EndOffset {
		if a.EndOffset < b.EndOffset {
			return -1
		}
		return 1
	}
	return int(a.Epoch) - int(b.Epoch)
}

type snapshotKind int

const (
	snapshotFrozen snapshotKind = iota
	snapshotPartial
	snapshotDeleted
)

// parseSnapshotName reads the id out of a snapshot file name of any kind.
func parseSnapshotName(name string) (SnapshotID, snapshotKind, bool) {
	kind := snapshotFrozen
	switch {
	case strings.HasSuffix(name, snapshotPartialSuffix):
		kind = snapshotPartial
	case strings.HasSuffix(name, snapshotDeletedSuffix):
		kind = snapshotDeleted
	case !strings.HasSuffix(name, snapshotSuffix):
		return SnapshotID{}, 0, false
	}
	if len(name) < 31 || name[20] != '-' {
		return SnapshotID{}, 0, false
	}
	off, err1 := strconv.ParseInt(name[:20], 10, 64)
	ep, err2 := strconv.ParseInt(name[21:31], 10, 32)
	if err1 != nil || err2 != nil || off < 0 || ep < 0 {
		return SnapshotID{}, 0, false
	}
	if kind == snapshotFrozen && len(name) != 31+len(snapshotSuffix) {
		return SnapshotID{}, 0, false
	}
	return SnapshotID{off, int32(ep)}, kind, true
}

// ListSnapshots returns the frozen snapshots in dir, oldest first. It
// removes what an interrupted write or delete left behind (.part and
// .deleted files), as Apache does on startup.
func ListSnapshots(fsys FS, dir string) ([]SnapshotID, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []SnapshotID
	removed := false
	for _, n := range names {
		id, kind, ok := parseSnapshotName(n)
		if !ok {
			continue
		}
		if kind != snapshotFrozen {
			if err := fsys.Remove(filepath.Join(dir, n)); err != nil && !isNotExist(err) {
				return nil, err
			}
			removed = true
			continue
		}
		ids = append(ids, id)
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(ids, compareSnapshotIDs)
	return ids, nil
}

// DeleteSnapshot deletes a frozen snapshot: rename to .deleted, fsync the
// directory (so it can never come back as a valid snapshot), remove.
func DeleteSnapshot(fsys FS, dir string, id SnapshotID) error {
	frozen := filepath.Join(dir, id.FileName())
	deleted := filepath.Join(dir, id.String()+snapshotDeletedSuffix)
	if err := fsys.Rename(frozen, deleted); err != nil {
		if isNotExist(err) {
			return nil
		}
		return err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return err
	}
	if err := fsys.Remove(deleted); err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}

// SnapshotWriter writes one snapshot file. Bytes go to a .part file that
// only Freeze turns into the snapshot.
type SnapshotWriter struct {
	fs       FS
	dir      string
	id       SnapshotID
	tmp      string
	f        File
	size     int64
	queued   int64 // bytes below this were handed to startWriteback
	done     bool
	onFreeze func(SnapshotID)
}

// writebackEvery is how many written bytes a snapshot writer hands to the
// kernel's writeback at a time (startWriteback), so that Freeze's fsync of
// a 40 MB snapshot waits for the last few MB only.
const writebackEvery = 4 << 20

// ErrSnapshotDone means Write, Freeze or Abort came after Freeze or Abort.
var ErrSnapshotDone = errors.New("storage: snapshot writer already frozen or aborted")

// CreateSnapshot starts writing snapshot id in dir.
func CreateSnapshot(fsys FS, dir string, id SnapshotID) (*SnapshotWriter, error) {
	if id.EndOffset < 0 || id.Epoch < 0 {
		return nil, fmt.Errorf("storage: invalid snapshot id %v", id)
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var rnd [8]byte
	if _, err := io.ReadFull(rand.Reader, rnd[:]); err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, fmt.Sprintf("%s-%d%s", id, binary.BigEndian.Uint64(rnd[:]), snapshotPartialSuffix))
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return &SnapshotWriter{fs: fsys, dir: dir, id: id, tmp: tmp, f: f}, nil
}

// ID is the snapshot being written.
func (w *SnapshotWriter) ID() SnapshotID { return w.id }

// Size is the number of bytes written so far.
func (w *SnapshotWriter) Size() int64 { return w.size }

// Write appends raw bytes (whole batches, normally) to the snapshot.
func (w *SnapshotWriter) Write(raw []byte) error {
	if w.done {
		return ErrSnapshotDone
	}
	if _, err := w.f.WriteAt(raw, w.size); err != nil {
		return err
	}
	w.size += int64(len(raw))
	if w.size-w.queued >= writebackEvery {
		startWriteback(w.f, w.queued, w.size-w.queued)
		w.queued = w.size
	}
	return nil
}

// Freeze makes the snapshot durable and visible: fsync the .part file,
// rename it to <id>.checkpoint, fsync the directory.
func (w *SnapshotWriter) Freeze() error {
	if w.done {
		return ErrSnapshotDone
	}
	w.done = true
	if err := w.f.Sync(); err != nil {
		w.discard()
		return err
	}
	if err := w.f.Close(); err != nil {
		w.discard()
		return err
	}
	if err := w.fs.Rename(w.tmp, filepath.Join(w.dir, w.id.FileName())); err != nil {
		w.discard()
		return err
	}
	if err := w.fs.SyncDir(w.dir); err != nil {
		return err
	}
	if w.onFreeze != nil {
		w.onFreeze(w.id)
	}
	return nil
}

// Abort drops the partial snapshot.
func (w *SnapshotWriter) Abort() error {
	if w.done {
		return ErrSnapshotDone
	}
	w.done = true
	return w.discard()
}

func (w *SnapshotWriter) discard() error {
	w.f.Close()
	if err := w.fs.Remove(w.tmp); err != nil && !isNotExist(err) {
		return err
	}
	return nil
}

// SnapshotReader reads a frozen snapshot.
type SnapshotReader struct {
	id   SnapshotID
	f    File
	size int64
}

// OpenSnapshot opens frozen snapshot id in dir.
func OpenSnapshot(fsys FS, dir string, id SnapshotID) (*SnapshotReader, error) {
	f, err := fsys.Open(filepath.Join(dir, id.FileName()))
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &SnapshotReader{id: id, f: f, size: st.Size()}, nil
}

// ID is the snapshot's id.
func (r *SnapshotReader) ID() SnapshotID { return r.id }

// Size is the snapshot file's size in bytes.
func (r *SnapshotReader) Size() int64 { return r.size }

// ReadAt returns up to maxBytes bytes from pos, not aligned to batches, as
// FetchSnapshot serves them. At or past the end it returns no bytes.
func (r *SnapshotReader) ReadAt(pos int64, maxBytes int) ([]byte, error) {
	if pos < 0 || maxBytes < 0 {
		return nil, fmt.Errorf("storage: snapshot read at %d of %d bytes", pos, maxBytes)
	}
	if pos >= r.size {
		return nil, nil
	}
	buf := make([]byte, min(int64(maxBytes), r.size-pos))
	if _, err := r.ReadInto(buf, pos); err != nil {
		return nil, err
	}
	return buf, nil
}

// ReadInto reads into p from pos, as much as fits or is left: the bytes
// read, io.EOF at or past the end, io.ErrUnexpectedEOF if the file ends
// before its size at open. Unlike ReadAt it allocates nothing.
func (r *SnapshotReader) ReadInto(p []byte, pos int64) (int, error) {
	if pos < 0 {
		return 0, fmt.Errorf("storage: snapshot read at %d", pos)
	}
	if pos >= r.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.size-pos)]
	n, err := r.f.ReadAt(p, pos)
	switch {
	case n == len(p):
		return n, nil
	case errors.Is(err, io.EOF): // the file is shorter than when opened
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// CopyRange writes the n bytes from pos to w, through buf where a copy is
// needed. From an operating-system file to a TCP connection the kernel
// moves them itself (sendfile): no copy through this process's memory.
func (r *SnapshotReader) CopyRange(w io.Writer, pos, n int64, buf []byte) (int64, error) {
	if pos < 0 || n < 0 || pos+n > r.size {
		return 0, fmt.Errorf("storage: snapshot range %d+%d of a %d-byte snapshot", pos, n, r.size)
	}
	if f, ok := r.f.(*os.File); ok {
		if _, err := f.Seek(pos, io.SeekStart); err != nil {
			return 0, err
		}
		return io.CopyBuffer(w, io.LimitReader(f, n), buf)
	}
	return io.CopyBuffer(w, io.NewSectionReader(r.f, pos, n), buf)
}

// Close closes the file.
func (r *SnapshotReader) Close() error { return r.f.Close() }
