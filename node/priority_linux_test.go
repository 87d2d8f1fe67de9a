package node

import (
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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

// TestBackgroundJobsKeepTheirThreads: jobs run one after another reuse
// the pool's threads, still at background priority: at most one new
// worker starts (if an earlier test's job was just finishing, none was
// idle yet).
func TestBackgroundJobsKeepTheirThreads(t *testing.T) {
	started := func() int {
		background.Lock()
		defer background.Unlock()
		return background.started
	}
	before := started()
	tids := map[int]bool{}
	for range 20 {
		var nice int
		if err := <-goExecutor(func() error { tids[syscall.Gettid()], nice = true, threadNice(t); return nil }); err != nil {
			t.Fatal(err)
		}
		if nice < backgroundNiceStep {
			t.Fatalf("a job ran at nice %d, want at least %d", nice, backgroundNiceStep)
		}
	}
	if n := started() - before; n > 1 {
		t.Errorf("20 jobs one after another started %d workers on %d threads", n, len(tids))
	}
}
