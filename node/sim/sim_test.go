package sim

import (
	"flag"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

var (
	flagSeed  = flag.Int64("sim.seed", -1, "run only this seed")
	flagSeeds = flag.Int("sim.seeds", 1000, "number of seeds TestSimulation runs")
	flagFirst = flag.Int64("sim.first", 0, "the first seed TestSimulation runs")
	flagSteps = flag.Int("sim.steps", 2000, "safety steps (10 ms each) per seed")
)

func options(seed uint64) Options {
	return Options{Seed: seed, SafetySteps: *flagSteps, LivenessSteps: 3000, StepMs: 10}
}

// TestSimulation runs -sim.seeds seeds from -sim.first (or just -sim.seed)
// in parallel workers; each seed is single-goroutine and deterministic.
func TestSimulation(t *testing.T) {
	if *flagSeed >= 0 {
		if err := Run(options(uint64(*flagSeed))); err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./node/sim -run 'TestSimulation$' -sim.seed=%d", *flagSeed, err, *flagSeed)
		}
		return
	}
	var next atomic.Int64
	next.Store(*flagFirst)
	end := *flagFirst + int64(*flagSeeds)
	var failures atomic.Int32
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seed := next.Add(1) - 1
				if seed >= end || failures.Load() >= 3 {
					return
				}
				if err := Run(options(uint64(seed))); err != nil {
					failures.Add(1)
					mu.Lock()
					t.Errorf("seed %d: %v\nreplay: go test ./node/sim -run 'TestSimulation$' -sim.seed=%d", seed, err, seed)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
}
