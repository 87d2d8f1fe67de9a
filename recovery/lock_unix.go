//go:build unix

package recovery

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kraftd/kraftd/storage"
)

// probeApacheLock tries the fcntl write lock Apache's FileChannel.tryLock
// takes on <dir>/.lock and lets it go at once. kraftd's own lock is a
// flock, which fcntl does not see on Linux, so both are tried.
func probeApacheLock(dir string) error {
	path := filepath.Join(dir, storage.LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			return fmt.Errorf("%w: a process (an Apache controller or broker?) holds the lock on %s; stop it first", ErrLocked, path)
		}
		return fmt.Errorf("recovery: lock %s: %w", path, err)
	}
	lk.Type = syscall.F_UNLCK
	return syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
}
