package storage

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive LockFileEx lock on f's first byte without
// waiting: the kind of lock Java's FileChannel.tryLock takes here, over a
// byte its lock covers, so each refuses the other.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	switch {
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return fmt.Errorf("%w: %s: another process (a kraftd, an Apache Kafka controller or broker) holds it; stop that process first",
			ErrLocked, f.Name())
	case err != nil:
		return fmt.Errorf("storage: lock %s: %w", f.Name(), err)
	}
	return nil
}

func unlockFile(f *os.File) {
	var ol windows.Overlapped
	_ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
