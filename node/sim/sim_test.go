package sim

import (
	"flag"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kraftd/kraftd/node"
)

var (
	flagSeed  = flag.Int64("sim.seed", -1, "run only this seed")
	flagSeeds = flag.Int("sim.seeds", defaultSeeds(), "number of seeds TestSimulation runs (default 1000, 200 in a race build)")
	flagFirst = flag.Int64("sim.first", 0, "the first seed TestSimulation runs")
	flagSteps = flag.Int("sim.steps", 2000, "safety steps (10 ms each) per seed")
)

// defaultSeeds: a race build finds data races in the few seeds it runs;
// the plain build's many seeds find the rare schedules.
func defaultSeeds() int {
	if raceBuild {
		return 200
	}
	return 1000
}

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
	// The seeds allocate much and keep little: collect less often.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var next atomic.Int64
	next.Store(*flagFirst)
	end := *flagFirst + int64(*flagSeeds)
	var failures atomic.Int32
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total Stats
	start := time.Now()
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seed := next.Add(1) - 1
				if seed >= end || failures.Load() >= 3 {
					return
				}
				st, err := RunStats(options(uint64(seed)))
				mu.Lock()
				total.Add(st)
				if err != nil {
					failures.Add(1)
					t.Errorf("seed %d: %v\nreplay: go test ./node/sim -run 'TestSimulation$' -sim.seed=%d", seed, err, seed)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("seeds %d-%d in %s, %d failed: %+v", *flagFirst, end-1, time.Since(start).Round(time.Second), failures.Load(), total)
}

// TestCheckerCatchesForgottenVote breaks vote durability on purpose (a
// restarted node forgets whom it voted for) and requires the checker to
// notice on some seed.
func TestCheckerCatchesForgottenVote(t *testing.T) {
	for seed := uint64(0); seed < 400; seed++ {
		opts := options(seed)
		opts.ForgetVoteOnRestart = true
		// Crash-heavy, contested elections make a forgotten vote matter.
		opts.Tweak = func(f *Faults) {
			f.Voters = 3 + int(seed%3)
			f.CrashProb, f.RestartProb = 0.01, 0.05
			f.DropProb = 0.2
		}
		err := Run(opts)
		if err != nil && (strings.Contains(err.Error(), "vote durability") || strings.Contains(err.Error(), "election safety")) {
			t.Logf("seed %d caught: %v", seed, strings.SplitN(err.Error(), "\n", 2)[0])
			return
		}
	}
	t.Fatal("no seed exposed a node that forgets its vote after a crash")
}

// TestCheckerCatchesBrokenRules breaks, one at a time, rules the runtime
// keeps (node.BrokenRules) and requires the checker to catch each on some
// seed, with the violation it names.
func TestCheckerCatchesBrokenRules(t *testing.T) {
	crashy := func(voters int) func(*Faults) {
		return func(f *Faults) {
			f.Voters = voters
			f.CrashProb, f.TornCrashProb, f.RestartProb = 0.005, 0.02, 0.05
			f.DropProb = 0.1
		}
	}
	cases := []struct {
		name   string
		broken node.BrokenRules
		tweak  func(*Faults)
		want   []string
	}{
		{"a vote sent before its quorum-state is durable", node.BrokenRules{SendBeforeHardState: true}, crashy(3),
			[]string{"vote durability", "election safety", "log matching"}},
		{"a follower that replays past its high watermark", node.BrokenRules{ReplayPastHighWatermark: true}, crashy(3),
			[]string{"beyond the committed offset"}},
		{"a leader that counts its unsynced copy", node.BrokenRules{CountUnsyncedLeaderCopy: true},
			func(f *Faults) { crashy(1)(f); f.DeferSyncProb = 1 },
			[]string{"leader completeness", "committed data", "lacks the committed history", "answered proposal"}},
		{"an answer before commit", node.BrokenRules{AckBeforeCommit: true}, crashy(3),
			[]string{"before it committed"}},
	}
	for _, tc := range cases {
		t.Run("intact: "+tc.name, func(t *testing.T) {
			// The same fault profile with the rule kept passes.
			for seed := uint64(0); seed < 20; seed++ {
				opts := options(seed)
				opts.Tweak = tc.tweak
				if err := Run(opts); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
		})
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(0); seed < 300; seed++ {
				opts := options(seed)
				opts.Broken, opts.Tweak = tc.broken, tc.tweak
				err := Run(opts)
				if err == nil {
					continue
				}
				first := strings.SplitN(err.Error(), "\n", 2)[0]
				for _, w := range tc.want {
					if strings.Contains(first, w) {
						t.Logf("seed %d caught: %s", seed, first)
						return
					}
				}
				t.Fatalf("seed %d failed otherwise: %s", seed, first)
			}
			t.Fatal("no seed exposed the broken rule")
		})
	}
}

// TestCheckerCatchesSpuriousElection runs healthy seeds whose leader pauses
// past the silence bound, which must cost it the leadership, and requires
// the spurious-election rule to fire on some seed; the same seeds with
// pauses under the bound pass.
func TestCheckerCatchesSpuriousElection(t *testing.T) {
	healthy := func(pauseMaxMs int64) func(*Faults) {
		return func(f *Faults) {
			f.Voters = 3
			f.Silent.Healthy, f.Silent.Silence = true, true
			f.Silent.PauseProb, f.Silent.PauseMaxMs, f.Silent.ClockJumpProb, f.Silent.SlowSyncMaxMs = 0.01, pauseMaxMs, 0, 500
			f.DropProb, f.PartitionMode, f.CrashProb, f.TornCrashProb, f.UnreachableProb = 0, PartitionNone, 0, 0, 0
			f.DelayMaxMs = f.DelayMinMs + 5
			f.OldPeer, f.ReconfigProb, f.ReformatProb, f.AutoJoin = -1, 0, 0, false
		}
	}
	for seed := uint64(0); seed < 10; seed++ {
		opts := options(seed)
		opts.Tweak = healthy(150)
		if err := Run(opts); err != nil {
			t.Fatalf("seed %d, pauses under the bound: %v", seed, err)
		}
	}
	for seed := uint64(0); seed < 50; seed++ {
		opts := options(seed)
		opts.Tweak = healthy(2000)
		err := Run(opts)
		if err == nil {
			continue
		}
		first := strings.SplitN(err.Error(), "\n", 2)[0]
		if !strings.Contains(first, "spurious election") {
			t.Fatalf("seed %d failed otherwise: %s", seed, first)
		}
		t.Logf("seed %d caught: %s", seed, first)
		return
	}
	t.Fatal("no seed's long pause made a spurious election")
}
