package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// FS is the small file-system interface every storage file goes through, in
// the style of pebble's vfs.FS. OSFS is the real disk; MemFS is an in-memory
// disk that can crash and inject errors, for tests and the simulator.
//
// Durability contract (the same for both): bytes written to a File are
// durable only after File.Sync returns; a create, rename or remove is durable
// only after SyncDir on the directory that holds the name returns.
type FS interface {
	// Create creates or truncates name and opens it read-write.
	Create(name string) (File, error)
	// OpenFile opens name with os.O_* flags (O_RDONLY, O_RDWR, O_WRONLY,
	// O_CREATE, O_EXCL, O_TRUNC are supported).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Open opens name read-only.
	Open(name string) (File, error)
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string, perm fs.FileMode) error
	// ReadDir returns the sorted names of dir's entries.
	ReadDir(dir string) ([]string, error)
	// Stat describes name.
	Stat(name string) (fs.FileInfo, error)
	// Lock takes an exclusive lock on name (created if needed) that another
	// process or FS user cannot take until the returned Closer is closed.
	Lock(name string) (io.Closer, error)
	// SyncDir makes the creates, renames and removes in dir durable.
	SyncDir(dir string) error
}

// File is an open file of an FS.
type File interface {
	io.Writer   // sequential write from the current position
	io.WriterAt // positional write; does not move the position
	io.ReaderAt
	// Sync makes every byte written so far durable.
	Sync() error
	// Truncate changes the file's size; growing fills with zero bytes.
	Truncate(size int64) error
	Close() error
	Stat() (fs.FileInfo, error)
}

// ErrLocked means another process (or another user of the same MemFS) holds
// the directory lock.
var ErrLocked = errors.New("storage: directory is locked by another process")

// OSFS is the FS of the real disk.
type OSFS struct{}

var _ FS = OSFS{}

// Create implements FS.
func (OSFS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// OpenFile implements FS.
func (OSFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
}

// Open implements FS.
func (OSFS) Open(name string) (File, error) { return os.Open(name) }

// Rename implements FS.
func (OSFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Remove implements FS.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// MkdirAll implements FS.
func (OSFS) MkdirAll(dir string, perm fs.FileMode) error { return os.MkdirAll(dir, perm) }

// ReadDir implements FS.
func (OSFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

// Stat implements FS.
func (OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// SyncDir implements FS: it opens the directory and fsyncs it, which is what
// makes new, renamed and removed names survive a power loss on Linux.
func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

// Lock implements FS with an exclusive, non-blocking lock on name (see
// lockFile). It refuses a file another kraftd or an Apache Kafka process
// (its FileLock on `.lock`) holds. The lock dies with the process.
//
// On Linux kraftd holds a flock, which Apache's fcntl lock does not see,
// so an Apache process started on a kraftd's directory is not refused
// there; holding the fcntl lock too would not be safe, as any close of
// the file by this process drops it.
func (OSFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return osLock{f}, nil
}

type osLock struct{ f *os.File }

func (l osLock) Close() error {
	unlockFile(l.f)
	return l.f.Close()
}

// LockFileName is the name of the directory lock file, as Apache uses it.
const LockFileName = ".lock"

// LockDir takes the exclusive lock on dir/.lock. A second process (or a
// second LockDir on the same MemFS) fails with ErrLocked. Call unlock when
// done; the OS releases the lock anyway when the process dies.
func LockDir(fsys FS, dir string) (unlock func() error, err error) {
	c, err := fsys.Lock(filepath.Join(dir, LockFileName))
	if err != nil {
		return nil, err
	}
	return c.Close, nil
}

// CheckNotLocked refuses dir with ErrLocked when another process holds its
// lock, taking the lock and letting it go at once; a directory without a
// lock file is not given one. Format checks each directory so before
// writing into it.
func CheckNotLocked(fsys FS, dir string) error {
	name := filepath.Join(dir, LockFileName)
	if ok, err := exists(fsys, name); err != nil || !ok {
		return err
	}
	c, err := fsys.Lock(name)
	if err != nil {
		return err
	}
	return c.Close()
}

// readFile reads a whole (small) file.
func readFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// WriteFileAtomic replaces path with data the way Apache replaces its small
// state files: write path+".tmp", fsync it, rename over path, fsync the
// directory. A crash leaves either the old or the new content, never a mix.
// The metadata package uses it for bootstrap.checkpoint too.
func WriteFileAtomic(fsys FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fsys.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("storage: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("storage: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(path))
}

func exists(fsys FS, name string) (bool, error) {
	_, err := fsys.Stat(name)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}
