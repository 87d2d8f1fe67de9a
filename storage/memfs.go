package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// MemFS is an in-memory FS that can lose power. Every file keeps the bytes
// it had at its last Sync next to its current bytes, and every directory
// keeps its names as of its last SyncDir next to the ordered list of
// creates, renames and removes since. Crash returns the disk a power loss
// could leave behind. It is safe for concurrent use.
//
// NB: directories themselves are durable as soon as MkdirAll returns; only
// the files inside them are modelled as losable.
type MemFS struct {
	mu    sync.Mutex
	dirs  map[string]*memDir
	locks map[string]bool

	// Error injection: countdowns (0 = off) of the write and sync calls
	// still to succeed before one fails with ErrInjected.
	failWriteIn int
	failSyncIn  int
}

// ErrInjected is the error MemFS returns for an injected fault.
var ErrInjected = errors.New("storage: injected I/O error")

type memNode struct {
	data   []byte // what a reader sees now
	synced []byte // what survives a crash for sure
}

type memDir struct {
	live    map[string]*memNode
	durable map[string]*memNode
	// ops since the last SyncDir, oldest first. A crash keeps a random prefix.
	ops []dirOp
}

// dirOp sets names to nodes (nil removes) atomically: a rename is one op.
type dirOp []nameNode

type nameNode struct {
	name string
	node *memNode
}

// NewMemFS returns an empty MemFS with only the root directory "/".
func NewMemFS() *MemFS {
	m := &MemFS{dirs: map[string]*memDir{}, locks: map[string]bool{}}
	m.dirs["/"] = newMemDir()
	m.dirs["."] = newMemDir()
	return m
}

func newMemDir() *memDir {
	return &memDir{live: map[string]*memNode{}, durable: map[string]*memNode{}}
}

var _ FS = (*MemFS)(nil)

// FailWrite makes the n-th write call from now (1 = the next one) fail with
// ErrInjected without writing anything.
func (m *MemFS) FailWrite(n int) {
	m.mu.Lock()
	m.failWriteIn = n
	m.mu.Unlock()
}

// FailSync makes the n-th File.Sync or SyncDir call from now fail with
// ErrInjected without making anything durable.
func (m *MemFS) FailSync(n int) {
	m.mu.Lock()
	m.failSyncIn = n
	m.mu.Unlock()
}

func countdown(c *int) bool {
	if *c == 0 {
		return false
	}
	*c--
	return *c == 0
}

func splitPath(name string) (dir, base string) {
	name = filepath.Clean(name)
	return filepath.Dir(name), filepath.Base(name)
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

func (d *memDir) apply(op dirOp) {
	for _, nn := range op {
		if nn.node == nil {
			delete(d.live, nn.name)
		} else {
			d.live[nn.name] = nn.node
		}
	}
	d.ops = append(d.ops, op)
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	return m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) { return m.OpenFile(name, os.O_RDONLY, 0) }

// OpenFile implements FS.
func (m *MemFS) OpenFile(name string, flag int, _ fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base := splitPath(name)
	d := m.dirs[dir]
	if d == nil {
		return nil, pathErr("open", name, fs.ErrNotExist)
	}
	if _, isDir := m.dirs[filepath.Clean(name)]; isDir {
		if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
			return nil, pathErr("open", name, errors.New("is a directory"))
		}
		return &memFile{fs: m, name: name, node: &memNode{}, readOnly: true}, nil
	}
	n := d.live[base]
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	case n == nil:
		n = &memNode{}
		d.apply(dirOp{{base, n}})
	}
	readOnly := flag&(os.O_WRONLY|os.O_RDWR) == 0
	if flag&os.O_TRUNC != 0 && !readOnly {
		n.data = n.data[:0:0]
	}
	return &memFile{fs: m, name: name, node: n, readOnly: readOnly}, nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	od, ob := splitPath(oldname)
	nd, nb := splitPath(newname)
	src, dst := m.dirs[od], m.dirs[nd]
	if src == nil || dst == nil || src.live[ob] == nil {
		return pathErr("rename", oldname, fs.ErrNotExist)
	}
	n := src.live[ob]
	if od == nd {
		if ob != nb {
			src.apply(dirOp{{nb, n}, {ob, nil}})
		}
		return nil
	}
	dst.apply(dirOp{{nb, n}})
	src.apply(dirOp{{ob, nil}})
	return nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	clean := filepath.Clean(name)
	if d, ok := m.dirs[clean]; ok {
		if len(d.live) > 0 || len(m.subdirs(clean)) > 0 {
			return pathErr("remove", name, errors.New("directory not empty"))
		}
		delete(m.dirs, clean)
		return nil
	}
	dir, base := splitPath(name)
	d := m.dirs[dir]
	if d == nil || d.live[base] == nil {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	d.apply(dirOp{{base, nil}})
	return nil
}

func (m *MemFS) subdirs(dir string) []string {
	var out []string
	for p := range m.dirs {
		if p != dir && filepath.Dir(p) == dir {
			out = append(out, filepath.Base(p))
		}
	}
	return out
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(dir string, _ fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, ok := m.dirs[p]; ok {
			break
		}
		parent, base := splitPath(p)
		if pd := m.dirs[parent]; pd != nil && pd.live[base] != nil {
			return pathErr("mkdir", p, errors.New("not a directory"))
		}
		m.dirs[p] = newMemDir()
	}
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	clean := filepath.Clean(dir)
	d := m.dirs[clean]
	if d == nil {
		return nil, pathErr("readdir", dir, fs.ErrNotExist)
	}
	names := m.subdirs(clean)
	for n := range d.live {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	clean := filepath.Clean(name)
	if _, ok := m.dirs[clean]; ok {
		return memInfo{name: filepath.Base(clean), dir: true}, nil
	}
	dir, base := splitPath(name)
	if d := m.dirs[dir]; d != nil && d.live[base] != nil {
		return memInfo{name: base, size: int64(len(d.live[base].data))}, nil
	}
	return nil, pathErr("stat", name, fs.ErrNotExist)
}

// Lock implements FS; the lock lives in this MemFS value only.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	f, err := m.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	f.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	clean := filepath.Clean(name)
	if m.locks[clean] {
		return nil, fmt.Errorf("%w: %s", ErrLocked, name)
	}
	m.locks[clean] = true
	return memLock{m, clean}, nil
}

type memLock struct {
	m    *MemFS
	name string
}

func (l memLock) Close() error {
	l.m.mu.Lock()
	delete(l.m.locks, l.name)
	l.m.mu.Unlock()
	return nil
}

// SyncDir implements FS.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if countdown(&m.failSyncIn) {
		return pathErr("syncdir", dir, ErrInjected)
	}
	d := m.dirs[filepath.Clean(dir)]
	if d == nil {
		return pathErr("syncdir", dir, fs.ErrNotExist)
	}
	d.durable = make(map[string]*memNode, len(d.live))
	for k, v := range d.live {
		d.durable[k] = v
	}
	d.ops = nil
	return nil
}

// Crash returns the disk as a power loss at this instant could leave it,
// drawing every choice from rng:
//   - a file keeps its synced bytes plus a random prefix of the bytes
//     appended since (a torn tail cut at any byte); an unsynced overwrite
//     inside the synced part survives or not per 512-byte block; an unsynced
//     shrink may be undone;
//   - with probability 1/4 one byte of the surviving unsynced tail is flipped;
//   - each directory keeps its synced names plus a random prefix of the
//     creates, renames and removes made since its last SyncDir.
//
// The receiver is left untouched; the result has no open files or locks.
func (m *MemFS) Crash(rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := NewMemFS()
	crashed := map[*memNode]*memNode{}
	survive := func(n *memNode) *memNode {
		if c, ok := crashed[n]; ok {
			return c
		}
		b := crashBytes(n, rng)
		c := &memNode{data: b, synced: bytes.Clone(b)}
		crashed[n] = c
		return c
	}
	paths := make([]string, 0, len(m.dirs))
	for p := range m.dirs {
		paths = append(paths, p)
	}
	sort.Strings(paths) // map order must not reach rng draws
	for _, p := range paths {
		d := m.dirs[p]
		names := map[string]*memNode{}
		for k, v := range d.durable {
			names[k] = v
		}
		keep := rng.IntN(len(d.ops) + 1)
		for _, op := range d.ops[:keep] {
			for _, nn := range op {
				if nn.node == nil {
					delete(names, nn.name)
				} else {
					names[nn.name] = nn.node
				}
			}
		}
		nd := newMemDir()
		keys := make([]string, 0, len(names))
		for k := range names {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c := survive(names[k])
			nd.live[k], nd.durable[k] = c, c
		}
		out.dirs[p] = nd
	}
	return out
}

const crashBlock = 512

func crashBytes(n *memNode, rng *rand.Rand) []byte {
	cur, syn := n.data, n.synced
	var size int
	if len(cur) >= len(syn) {
		size = len(syn) + rng.IntN(len(cur)-len(syn)+1)
	} else if rng.IntN(2) == 0 {
		size = len(cur)
	} else {
		size = len(syn)
	}
	out := make([]byte, size)
	copy(out, syn)
	overlap := min(size, len(syn), len(cur))
	for b := 0; b < overlap; b += crashBlock {
		e := min(b+crashBlock, overlap)
		if !bytes.Equal(cur[b:e], syn[b:e]) && rng.IntN(2) == 0 {
			copy(out[b:e], cur[b:e])
		}
	}
	if size > len(syn) {
		copy(out[len(syn):], cur[len(syn):size])
		if rng.IntN(4) == 0 {
			out[len(syn)+rng.IntN(size-len(syn))] ^= byte(1 + rng.IntN(255))
		}
	}
	return out
}

// memFile is an open MemFS file.
type memFile struct {
	fs       *MemFS
	name     string
	node     *memNode
	readOnly bool
	closed   bool
	pos      int64
}

func (f *memFile) check(op string, write bool) error {
	if f.closed {
		return pathErr(op, f.name, fs.ErrClosed)
	}
	if write && f.readOnly {
		return pathErr(op, f.name, errors.New("file opened read-only"))
	}
	return nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n, err := f.writeAtLocked(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.writeAtLocked(p, off)
}

func (f *memFile) writeAtLocked(p []byte, off int64) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", f.name, errors.New("negative offset"))
	}
	if countdown(&f.fs.failWriteIn) {
		return 0, pathErr("write", f.name, ErrInjected)
	}
	end := int(off) + len(p)
	if end > len(f.node.data) {
		if end > cap(f.node.data) {
			grown := make([]byte, len(f.node.data), max(end, 2*cap(f.node.data)))
			copy(grown, f.node.data)
			f.node.data = grown
		}
		f.node.data = f.node.data[:end]
	}
	copy(f.node.data[off:], p)
	return len(p), nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, errors.New("negative offset"))
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("sync", false); err != nil {
		return err
	}
	if countdown(&f.fs.failSyncIn) {
		return pathErr("sync", f.name, ErrInjected)
	}
	f.node.synced = bytes.Clone(f.node.data)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, errors.New("negative size"))
	}
	if int(size) <= len(f.node.data) {
		// Copy so the synced slice never aliases bytes we drop and regrow.
		f.node.data = bytes.Clone(f.node.data[:size])
	} else {
		f.node.data = append(f.node.data, make([]byte, int(size)-len(f.node.data))...)
	}
	return nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return memInfo{name: filepath.Base(f.name), size: int64(len(f.node.data))}, nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

// String lists the files and sizes, for test failure messages.
func (m *MemFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sb strings.Builder
	paths := make([]string, 0, len(m.dirs))
	for p := range m.dirs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		d := m.dirs[p]
		names := make([]string, 0, len(d.live))
		for n := range d.live {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&sb, "%s %d (synced %d)\n", filepath.Join(p, n), len(d.live[n].data), len(d.live[n].synced))
		}
	}
	return sb.String()
}
