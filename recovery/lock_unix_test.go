//go:build unix

package recovery

import (
	"fmt"
	"os"
	"syscall"
)

// lockForever takes an fcntl write lock on path, says "locked" on stdout
// and blocks until killed.
func lockForever(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLKW, &lk); err != nil {
		return err
	}
	fmt.Print("locked")
	select {}
}
