package compat

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchProfileDir is KRAFTD_BENCH_PROFILE: a directory where the
// benchmarks that start kraftd quorums write Go profiles of the active
// controller, phase by phase (the figures of such a run pay for the
// profiling; it is for finding where time goes, not for the table).
// Empty: no profiling, and no metrics listener.
func benchProfileDir() string { return os.Getenv("KRAFTD_BENCH_PROFILE") }

// profileProps are the properties that serve pprof on a free loopback
// port, and that port's address; nil when no profile is asked for.
func profileProps(tb testing.TB) (map[string]string, string) {
	if benchProfileDir() == "" {
		return nil, ""
	}
	addr := Addr(FreePorts(tb, 1)[0])
	return map[string]string{"kraftd.metrics.listener": "http://" + addr, "kraftd.metrics.pprof.enable": "true"}, addr
}

// profiling is a profile being taken; wait returns once it is written.
type profiling struct{ done chan struct{} }

func (p *profiling) wait() {
	if p != nil {
		<-p.done
	}
}

// startProfiles takes, in the background, a CPU profile of d and an
// execution trace of its first min(d, 3 s) from the pprof listener at
// addr, into KRAFTD_BENCH_PROFILE as <name>.cpu.pprof and <name>.trace;
// and, at its start and its end, the metrics (<name>.metrics-{start,end}.txt)
// and, with allocs, the allocation profile (<name>.allocs-{start,end}.pprof:
// the difference is what the phase allocated). A heap profile is as of the
// last garbage collection, so allocs has the node collect first: a second
// of CPU at a million partitions, so not for a phase timed from its start.
// With no directory or no listener it does nothing (and wait returns at
// once).
func startProfiles(tb testing.TB, addr, name string, d time.Duration, allocs bool) *profiling {
	dir := benchProfileDir()
	if dir == "" || addr == "" {
		return nil
	}
	secs := max(1, int(d.Seconds()))
	fetch := func(path, file string) {
		client := http.Client{Timeout: d + 30*time.Second}
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			tb.Logf("profile %s: %v", file, err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			tb.Logf("profile %s: HTTP %d", file, resp.StatusCode)
			return
		}
		f, err := os.Create(filepath.Join(dir, file))
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			err = closeAfter(f, err)
		}
		if err != nil {
			tb.Logf("profile %s: %v", file, err)
		}
	}
	p := &profiling{done: make(chan struct{})}
	counters := func(when string) {
		fetch("/metrics", name+".metrics-"+when+".txt")
		if allocs {
			// heap, not allocs: net/http/pprof collects first (gc=1)
			// only for the heap profile, which holds the same samples.
			fetch("/debug/pprof/heap?gc=1", name+".allocs-"+when+".pprof")
		}
	}
	counters("start")
	go func() {
		defer close(p.done)
		defer counters("end")
		traced := make(chan struct{})
		go func() {
			defer close(traced)
			fetch(fmt.Sprintf("/debug/pprof/trace?seconds=%d", min(secs, 3)), name+".trace")
		}()
		fetch(fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), name+".cpu.pprof")
		<-traced
	}()
	return p
}

func closeAfter(f *os.File, err error) error {
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
