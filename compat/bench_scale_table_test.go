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
// advantage is computed, target is the for kraftd ("" for none).
type scaleRow struct {
	phase, name, unit string
	lowerBetter       bool
	target            string
}

var scaleRows = []scaleRow{
	{"load", "all brokers unfenced after", "s", true, ""},
	{"load", "CreateTopics throughput", "partitions/s", false, ""},
	{"load", "active controller RSS after load", "MiB", true, ""},
	{"snapshot", "heartbeat p99 before the snapshot", "ms", true, ""},
	{"snapshot", "heartbeat p99 during the snapshot", "ms", true, "<= 2x before"},
	{"snapshot", "snapshot write (.part file seen)", "ms", true, ""},
	{"snapshot", "leader RSS above its level before", "MiB", true, ""},
	{"snapshot", "snapshot bytes per partition", "bytes", true, "Apache ~100"},
	{"steady", "controller CPU, 3 controllers", "cores", true, ""},
	{"steady", "  of which the active controller", "cores", true, ""},
	{"steady", "active controller RSS", "MiB", true, ""},
	{"steady", "followers' RSS, together", "MiB", true, ""},
	{"steady", "heartbeat p99", "ms", true, ""},
	{"storm", "all observers caught up after (median round)", "s", true, ""},
	{"storm", "leader RSS above idle during the storm", "MiB", true, "<= 21 MiB"},
	{"storm", "concurrent CreateTopics p50", "ms", true, ""},
	{"storm", "concurrent CreateTopics p99", "ms", true, "no stall"},
	{"storm", "concurrent CreateTopics max", "ms", true, ""},
	{"one-broker", "one broker: partitions it led", "", false, ""},
	{"one-broker", "one broker: last heartbeat to first fence", "s", true, ""},
	{"one-broker", "one broker: fence to every partition led", "ms", true, "<= 50 ms"},
	{"one-broker", "one broker: fence to the fleet fetched it", "ms", true, "<= 100 ms"},
	{"one-rack", "one rack: partitions it led", "", false, ""},
	{"one-rack", "one rack: last heartbeat to first fence", "s", true, ""},
	{"one-rack", "one rack: fence to every partition led", "ms", true, ""},
	{"one-rack", "one rack: fence to the fleet fetched it", "ms", true, ""},
	{"one-rack", "one rack: last fence to every partition led", "ms", true, "<= 50 ms"},
	{"one-rack", "one rack: last fence to the fleet fetched it", "ms", true, "<= 100 ms"},
	{"failover", "kill to a heartbeat answered", "ms", true, ""},
	{"failover", "kill to a CreateTopics answered", "ms", true, ""},
}

// scaleTable renders both sides' figures with kraftd's advantage (Apache
// over kraftd for lower-is-better figures) and each phase's stolen CPU.
func scaleTable(cfg scaleConfig, figures map[string]*scaleFigures) string {
	kraftd, apache := figures["kraftd"], figures["apache"]
	var out strings.Builder
	fmt.Fprintf(&out, "\nController at scale: %d simulated brokers on %d racks, %d topics of %d partitions (RF %d), %d storms of %d observers, %v windows\n",
		cfg.brokers, cfg.racks, cfg.topics, cfg.partitions, cfg.rf, cfg.stormRounds, cfg.observers, cfg.window)
	fmt.Fprintf(&out, "%-11s %-44s %-12s %10s %10s %9s %-13s %s\n", "phase", "figure", "unit", "kraftd", "Apache", "adv", "target", "steal k/A %")
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
		fmt.Fprintf(&out, "%-11s %-44s %-12s %10s %10s %9s %-13s %s/%s\n", r.phase, r.name, r.unit, cell(kraftd, r), cell(apache, r), adv, r.target,
			stealCell(kraftd, r.phase), stealCell(apache, r.phase))
	}
	for _, side := range []string{"kraftd", "apache"} {
		if f := figures[side]; f != nil {
			fmt.Fprintf(&out, "%s: %s; broker errors: %s\n", side, strings.Join(f.notes, "; "), f.brokerErrors)
		}
	}
	return out.String()
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
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb << 10, nil
				}
			}
		}
	}
	return 0, errorf("/proc/%d/status: no VmRSS in kB", pid)
}

func mustRSS(b *testing.B, pid int) int64 {
	n, err := ProcessRSS(pid)
	if err != nil {
		b.Fatalf("controller RSS: %v", err)
	}
	return n
}

// rssPeak samples a process's resident memory every 10 ms from its start.
type rssPeak struct {
	base, peak atomic.Int64
	done       chan struct{}
	stopped    chan struct{}
}

// startRSSPeak records pid's resident memory now, then samples its peak.
func startRSSPeak(pid int) *rssPeak {
	p := &rssPeak{done: make(chan struct{}), stopped: make(chan struct{})}
	base, _ := ProcessRSS(pid)
	p.base.Store(base)
	p.peak.Store(base)
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
			if n, err := ProcessRSS(pid); err == nil && n > p.peak.Load() {
				p.peak.Store(n)
			}
		}
	}()
	return p
}

// stop ends sampling and returns the peak above the level at the start.
func (p *rssPeak) stop() int64 {
	close(p.done)
	<-p.stopped
	return max(0, p.peak.Load()-p.base.Load())
}
