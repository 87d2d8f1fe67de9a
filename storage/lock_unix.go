//go:build unix

package storage

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes flock(LOCK_EX|LOCK_NB) on f; held reports that another
// process has it.
func lockFile(f *os.File) (held bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK), err
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
