//go:build unix

package kit

import (
	"os"
	"syscall"
)

// waitLock waits for an exclusive flock on f.
func waitLock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

func unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
