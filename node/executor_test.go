package node

import (
	"runtime"
	"testing"
	"time"
)

func backgroundJobs() int {
	extraProcs.Lock()
	defer extraProcs.Unlock()
	return extraProcs.n
}

// TestBackgroundWorkGetsItsOwnP: while background work holds a P, the
// runtime has one more, so that the loop and the connections keep as many
// as before; afterwards GOMAXPROCS is back where it was.
func TestBackgroundWorkGetsItsOwnP(t *testing.T) {
	// An earlier test's snapshot may still be finishing.
	for deadline := time.Now().Add(10 * time.Second); backgroundJobs() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d background jobs still running", backgroundJobs())
		}
	}
	before := runtime.GOMAXPROCS(0)
	var inside int
	if err := <-goExecutor(Yielding, func() error { inside = runtime.GOMAXPROCS(0); return nil }); err != nil {
		t.Fatal(err)
	}
	if inside != before+1 {
		t.Errorf("GOMAXPROCS %d during background work, want %d", inside, before+1)
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Errorf("GOMAXPROCS %d after background work, want %d", after, before)
	}
}
