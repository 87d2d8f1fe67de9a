package compat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scaleFigures are one side's measurements by phase and name.
type scaleFigures struct {
	values       map[string]float64 // "phase/name" -> value
	steal        map[string]float64 // phase -> % of CPU time stolen
	notes        []string
	brokerErrors string
}

func newScaleFigures() *scaleFigures {
	return &scaleFigures{values: map[string]float64{}, steal: map[string]float64{}}
}

func (f *scaleFigures) set(phase, name string, v float64) { f.values[phase+"/"+name] = v }

func (f *scaleFigures) stealOf(phase string, m StealMeter) { f.steal[phase] = m.Percent() }

// scaleRow is one line of the table: lowerBetter says which way kraftd's
// advantage is computed; target is the for kraftd ("" for none)
// and held checks it (nil: not checked); fixed marks a figure the
// workload sets (partitions a broker led), which neither side wins.
type scaleRow struct {
	phase, name, unit string
	lowerBetter       bool
	target            string
	held              func(kraftd, apache float64, f *scaleFigures) bool
	fixed             bool
}

// atMost is a target of at most limit.
func atMost(limit float64) func(k, a float64, f *scaleFigures) bool {
	return func(k, _ float64, _ *scaleFigures) bool { return k <= limit }
}

var scaleRows = []scaleRow{
	{"load", "all brokers unfenced after", "s", true, "", nil, false},
	{"load", "CreateTopics throughput", "partitions/s", false, "", nil, false},
	{"load", "active controller RSS after load", "MiB", true, "", nil, false},
	{"snapshot", "heartbeat p99 before the snapshot", "ms", true, "", nil, false},
	{"snapshot", "heartbeat p99 during the snapshot", "ms", true, "<= 2x before", func(k, _ float64, f *scaleFigures) bool {
		return k <= 2*f.values["snapshot/heartbeat p99 before the snapshot"]
	}, false},
	{"snapshot", "snapshot write (.part file seen)", "ms", true, ">= 2x Apache", func(k, a float64, _ *scaleFigures) bool { return 2*k <= a }, false},
	{"snapshot", "leader RSS above its level before", "MiB", true, "", nil, false},
	{"snapshot", "snapshot bytes per partition", "bytes", true, "Apache ~100", nil, false},
	{"steady", "controller CPU, 3 controllers", "cores", true, "", nil, false},
	{"steady", "  of which the active controller", "cores", true, "", nil, false},
	{"steady", "active controller RSS", "MiB", true, "", nil, false},
	{"steady", "followers' RSS, together", "MiB", true, "", nil, false},
	{"steady", "heartbeat p99", "ms", true, "", nil, false},
	{"steady", "one writer's CreateTopics p50", "ms", true, "", nil, false},
	{"steady", "one writer's CreateTopics p99", "ms", true, "", nil, false},
	{"storm", "all observers caught up after (median round)", "s", true, "", nil, false},
	{"storm", "leader RSS above idle during the storm", "MiB", true, "<= 21 MiB", atMost(21), false},
	{"storm", "concurrent CreateTopics p50", "ms", true, "", nil, false},
	{"storm", "concurrent CreateTopics p99", "ms", true, "<= steady+20ms", func(k, _ float64, f *scaleFigures) bool {
		steady, ok := f.values["steady/one writer's CreateTopics p99"]
		return ok && k <= steady+20
	}, false},
	{"storm", "concurrent CreateTopics max", "ms", true, "", nil, false},
	{"one-broker", "one broker: partitions it led", "", false, "", nil, true},
	{"one-broker", "one broker: last heartbeat to first fence", "s", true, "", nil, false},
	{"one-broker", "one broker: fence to every partition led", "ms", true, "<= 50 ms", atMost(50), false},
	{"one-broker", "one broker: fence to the fleet fetched it", "ms", true, "<= 100 ms", atMost(100), false},
	{"one-rack", "one rack: partitions it led", "", false, "", nil, true},
	{"one-rack", "one rack: last heartbeat to first fence", "s", true, "", nil, false},
	{"one-rack", "one rack: fence to every partition led", "ms", true, "", nil, false},
	{"one-rack", "one rack: fence to the fleet fetched it", "ms", true, "", nil, false},
	{"one-rack", "one rack: last fence to every partition led", "ms", true, "<= 50 ms", atMost(50), false},
	{"one-rack", "one rack: last fence to the fleet fetched it", "ms", true, "<= 100 ms", atMost(100), false},
	{"failover", "kill to a heartbeat answered", "ms", true, "", nil, false},
	{"failover", "kill to a CreateTopics answered", "ms", true, "", nil, false},
}

// behind reports whether kraftd's figure k is worse than Apache's a; an
// equal figure (0 ms on both sides) is a tie, not a loss.
func (r scaleRow) behind(k, a float64) bool {
	if r.fixed {
		return false
	}
	if r.lowerBetter {
		return k > a
	}
	return k < a
}

// scaleTable renders both sides' figures with kraftd's advantage (Apache
// over kraftd for lower-is-better figures) and each phase's stolen CPU.
func scaleTable(cfg scaleConfig, figures map[string]*scaleFigures) string {
	kraftd, apache := figures["kraftd"], figures["apache"]
	var out strings.Builder
	fmt.Fprintf(&out, "\nController at scale: %d simulated brokers on %d racks, %d topics of %d partitions (RF %d), %d storms of %d observers, %v windows\n",
		cfg.brokers, cfg.racks, cfg.topics, cfg.partitions, cfg.rf, cfg.stormRounds, cfg.observers, cfg.window)
	fmt.Fprintf(&out, "%-11s %-44s %-12s %10s %10s %9s %-14s %s\n", "phase", "figure", "unit", "kraftd", "Apache", "adv", "target", "steal k/A %")
	value := func(f *scaleFigures, r scaleRow) (float64, bool) {
		if f == nil {
			return 0, false
		}
		v, ok := f.values[r.phase+"/"+r.name]
		return v, ok
	}
	cell := func(f *scaleFigures, r scaleRow) string {
		if v, ok := value(f, r); ok {
			return strconv.FormatFloat(v, 'f', 2, 64)
		}
		return "-"
	}
	stealCell := func(f *scaleFigures, phase string) string {
		if f == nil {
			return "-"
		}
		if s, ok := f.steal[phase]; ok {
			return strconv.FormatFloat(s, 'f', 1, 64)
		}
		return "-"
	}
	for _, r := range scaleRows {
		adv := "-"
		k, kok := value(kraftd, r)
		a, aok := value(apache, r)
		if kok && aok && k > 0 && a > 0 {
			ratio := k / a
			if r.lowerBetter {
				ratio = a / k
			}
			adv = fmt.Sprintf("%.2fx", ratio)
		}
		fmt.Fprintf(&out, "%-11s %-44s %-12s %10s %10s %9s %-14s %s/%s\n", r.phase, r.name, r.unit, cell(kraftd, r), cell(apache, r), adv, r.target,
			stealCell(kraftd, r.phase), stealCell(apache, r.phase))
	}
	fmt.Fprintln(&out, scaleVerdict(kraftd, apache, value))
	for _, side := range []string{"kraftd", "apache"} {
		if f := figures[side]; f != nil {
			fmt.Fprintf(&out, "%s: %s; broker errors: %s\n", side, strings.Join(f.notes, "; "), f.brokerErrors)
		}
	}
	return out.String()
}

// scaleVerdict is the table's last line: the figures where kraftd is not
// ahead of Apache, and the targets it missed (a target whose figure is
// missing counts as missed), or that there are none.
func scaleVerdict(kraftd, apache *scaleFigures, value func(*scaleFigures, scaleRow) (float64, bool)) string {
	if kraftd == nil {
		return "verdict: no kraftd figures"
	}
	var behind, missed []string
	for _, r := range scaleRows {
		k, kok := value(kraftd, r)
		a, aok := value(apache, r)
		if kok && aok && r.behind(k, a) {
			behind = append(behind, strings.TrimSpace(r.name))
		}
		relative := strings.Contains(r.target, "Apache") // checked only beside Apache's figure
		if r.held != nil && (aok || !relative) && (!kok || !r.held(k, a, kraftd)) {
			missed = append(missed, strings.TrimSpace(r.name)+" ("+r.target+")")
		}
	}
	line := "verdict: kraftd ahead of or tied with Apache on every figure"
	switch {
	case apache == nil:
		line = "verdict: no Apache figures to compare"
	case len(behind) > 0:
		line = "verdict: kraftd NOT ahead of Apache on: " + strings.Join(behind, "; ")
	}
	if len(missed) > 0 {
		return line + "\nverdict: kraftd targets missed: " + strings.Join(missed, "; ")
	}
	return line + "; every kraftd target held"
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mustCPU(b *testing.B, pids ...int) time.Duration {
	d, err := TotalCPU(pids...)
	if err != nil {
		b.Fatalf("controller CPU: %v", err)
	}
	return d
}

// ProcessRSS is a process's resident memory in bytes, from the VmRSS line
// of /proc/<pid>/status.
func ProcessRSS(pid int) (int64, error) {
	rss, _, err := processMemory(pid)
	return rss, err
}

// processMemory is a process's resident memory and the anonymous part of
// it (RssAnon: the heap and stacks, not file pages mapped in), in bytes.
func processMemory(pid int) (rss, anon int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, _ := strings.Cut(line, ":")
		var dst *int64
		switch name {
		case "VmRSS":
			dst = &rss
		case "RssAnon":
			dst = &anon
		}
		f := strings.Fields(rest)
		if dst == nil || len(f) != 2 || f[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err == nil {
			*dst, found = kb<<10, found+1
		}
	}
	if found != 2 {
		return 0, 0, errorf("/proc/%d/status: no VmRSS and RssAnon in kB", pid)
	}
	return rss, anon, nil
}

func mustRSS(b *testing.B, pid int) int64 {
	n, err := ProcessRSS(pid)
	if err != nil {
		b.Fatalf("controller RSS: %v", err)
	}
	return n
}

// rssPeak samples a process's resident memory every 10 ms from its start,
// and apart the anonymous part of it.
type rssPeak struct {
	base, peak         atomic.Int64
	baseAnon, peakAnon atomic.Int64
	done               chan struct{}
	stopped            chan struct{}
}

// startRSSPeak records pid's resident memory now, then samples its peak.
func startRSSPeak(pid int) *rssPeak {
	p := &rssPeak{done: make(chan struct{}), stopped: make(chan struct{})}
	base, anon, _ := processMemory(pid)
	p.base.Store(base)
	p.peak.Store(base)
	p.baseAnon.Store(anon)
	p.peakAnon.Store(anon)
	go func() {
		defer close(p.stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			if n, anon, err := processMemory(pid); err == nil {
				p.peak.Store(max(p.peak.Load(), n))
				p.peakAnon.Store(max(p.peakAnon.Load(), anon))
			}
		}
	}()
	return p
}

// anonAbove is the peak of the anonymous part above its level at the
// start; call it after stop.
func (p *rssPeak) anonAbove() int64 { return max(0, p.peakAnon.Load()-p.baseAnon.Load()) }

// stop ends sampling and returns the peak above the level at the start.
func (p *rssPeak) stop() int64 {
	close(p.done)
	<-p.stopped
	return max(0, p.peak.Load()-p.base.Load())
}
