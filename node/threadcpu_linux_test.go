package node

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time of the calling OS thread (the caller locks
// it): on a machine shared with other work it shows the work done, not
// the wait for a core.
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
