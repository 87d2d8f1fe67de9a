//go:build unix

package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile refuses f when another process holds the fcntl write lock
// Apache's FileLock takes (FileChannel.tryLock), trying it and letting it
// go at once, then takes flock(LOCK_EX|LOCK_NB), kraftd's own lock. On
// Linux neither kind of lock sees the other, so an Apache process on the
// directory holds only the first; the probe comes first because on the
// BSDs the two are one lock, which the flock would then hold against it.
func lockFile(f *os.File) error {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	switch err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); {
	case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES):
		return fmt.Errorf("%w: %s: another process holds its fcntl lock, as an Apache Kafka controller or broker does; "+
			"stop that process first", ErrLocked, f.Name())
	case err != nil:
		return fmt.Errorf("storage: lock %s: %w", f.Name(), err)
	}
	lk.Type = syscall.F_UNLCK
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		return fmt.Errorf("storage: lock %s: %w", f.Name(), err)
	}
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return fmt.Errorf("%w: %s: another process holds its flock, as a kraftd does; stop that process first", ErrLocked, f.Name())
	case err != nil:
		return fmt.Errorf("storage: lock %s: %w", f.Name(), err)
	}
	return nil
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
