package node

import (
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
	"testing"
)

// threadNice is the calling thread's nice value (the raw getpriority
// system call returns 20 minus it).
func threadNice(t *testing.T) int {
	t.Helper()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	return 20 - raw
}

// TestBackgroundWorkRunsAtLowerPriority: the production executor runs its
// work on a thread niced backgroundNiceStep below the thread that started
// it, which keeps its own, with a backgroundSliceNs slice.
func TestBackgroundWorkRunsAtLowerPriority(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadNice(t)
	var inside int
	var attr *unix.SchedAttr
	if err := <-goExecutor(func() error {
		inside = threadNice(t)
		var err error
		attr, err = unix.SchedGetAttr(0, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := min(19, before+backgroundNiceStep); inside != want {
		t.Errorf("background work ran at nice %d, want %d", inside, want)
	}
	// Kernels before 6.12 neither set nor report a fair thread's slice.
	if attr.Runtime != 0 && attr.Runtime != backgroundSliceNs {
		t.Errorf("background work ran with a %d ns slice, want %d", attr.Runtime, backgroundSliceNs)
	}
	if after := threadNice(t); after != before {
		t.Errorf("the starting thread's nice went from %d to %d", before, after)
	}
}
