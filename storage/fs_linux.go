package storage

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// reserveBlocks asks the file system to allocate disk blocks for
// [off, off+n) of f without changing its size (fallocate with
// FALLOC_FL_KEEP_SIZE), so that syncing appends there does not also write
// block-allocation metadata. Readers see nothing: the size stays that of the
// bytes written. Best effort: a File that is not a real file, or a file
// system that cannot do it, is left as it is.
func reserveBlocks(f File, off, n int64) {
	osf, ok := f.(*os.File)
	if !ok {
		return
	}
	if raw, err := osf.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) {
			const keepSize = 0x1 // FALLOC_FL_KEEP_SIZE
			_ = syscall.Fallocate(int(fd), keepSize, off, n)
		})
	}
}

// syncData makes the bytes written to f durable, and its size with them
// (fdatasync), without the timestamps a full fsync also writes: all a log
// segment needs. A File that is not a real file gets Sync.
func syncData(f File) error {
	osf, ok := f.(*os.File)
	if !ok {
		return f.Sync()
	}
	raw, err := osf.SyscallConn()
	if err != nil {
		return err
	}
	var syncErr error
	if err := raw.Control(func(fd uintptr) {
		for {
			syncErr = syscall.Fdatasync(int(fd))
			if !errors.Is(syncErr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if syncErr != nil {
		return &os.PathError{Op: "fdatasync", Path: osf.Name(), Err: syncErr}
	}
	return nil
}

// startWriteback asks the kernel to begin writing [off, off+n) of f to
// disk now, without waiting for it (sync_file_range with
// SYNC_FILE_RANGE_WRITE): a large file written this way as it grows
// leaves its final Sync only the tail to wait for, and the disk's work
// spread over the writing instead of one burst. Durability still comes
// from Sync. Best effort: a File that is not a real file is left as it is.
func startWriteback(f File, off, n int64) {
	osf, ok := f.(*os.File)
	if !ok {
		return
	}
	if raw, err := osf.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) {
			_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
		})
	}
}
