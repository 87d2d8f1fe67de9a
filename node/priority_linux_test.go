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
	nice, err := readThreadNice()
	if err != nil {
		t.Fatal(err)
	}
	return nice
}

// readThreadNice is threadNice for a job on a background worker, which
// must return its error rather than stop the test's goroutine.
func readThreadNice() (int, error) {
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	return 20 - raw, err
}

// TestBackgroundWorkRunsAtLowerPriority: the production executor runs its
// work on a thread niced below the process's other threads, which keep
// their own, with a backgroundSliceNs slice: backgroundNiceStep below for
// Yielding work (the leader's snapshot), nice 19 for Idle work (a
// follower's).
func TestBackgroundWorkRunsAtLowerPriority(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadNice(t)
	for urgency, want := range map[Urgency]int{Yielding: min(19, before+backgroundNiceStep), Idle: 19} {
		var inside int
		var attr *unix.SchedAttr
		if err := <-goExecutor(urgency, func() error {
			var err error
			if inside, err = readThreadNice(); err != nil {
				return err
			}
			attr, err = unix.SchedGetAttr(0, 0)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if inside != want {
			t.Errorf("background work of urgency %d ran at nice %d, want %d", urgency, inside, want)
		}
		// Kernels before 6.12 neither set nor report a fair thread's slice.
		if attr.Runtime != 0 && attr.Runtime != backgroundSliceNs {
			t.Errorf("background work of urgency %d ran with a %d ns slice, want %d", urgency, attr.Runtime, backgroundSliceNs)
		}
	}
	if after := threadNice(t); after != before {
		t.Errorf("the starting thread's nice went from %d to %d", before, after)
	}
}

// TestBackgroundJobsKeepTheirThreads: jobs run one after another reuse
// the pool's threads, still at background priority: at most one new
// worker starts (none if an earlier test left one idle).
func TestBackgroundJobsKeepTheirThreads(t *testing.T) {
	started := func() int {
		background.Lock()
		defer background.Unlock()
		return background.started
	}
	before, wantNice := started(), min(19, threadNice(t)+backgroundNiceStep)
	tids := map[int]bool{}
	for range 20 {
		var nice int
		job := func() error {
			var err error
			tids[syscall.Gettid()] = true
			nice, err = readThreadNice()
			return err
		}
		if err := <-goExecutor(Yielding, job); err != nil {
			t.Fatal(err)
		}
		if nice != wantNice {
			t.Fatalf("a job ran at nice %d, want %d", nice, wantNice)
		}
	}
	if n := started() - before; n > 1 || len(tids) > 1 && n > 0 {
		t.Errorf("20 jobs one after another started %d workers and ran on %d threads", n, len(tids))
	}
}
