//go:build unix

package metadata

import (
	"syscall"
	"time"
)

// cpuTime is the process's user plus system CPU time: on a machine shared
// with other work it shows what wall-clock time lost to waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
