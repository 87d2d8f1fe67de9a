//go:build unix

package metrics

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time (user and system) the process has used: on a
// shared machine it says what a scrape costs better than the wall clock.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
