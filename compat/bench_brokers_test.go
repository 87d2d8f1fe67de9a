package compat

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/storage"
)

// benchConfig sizes BenchmarkControllerSideBySide. The defaults are the
// issue's workload; the environment variables shrink it for a quick run.
type benchConfig struct {
	brokers       int           // KRAFTD_BENCH_BROKERS: simulated brokers
	topics        int           // KRAFTD_BENCH_TOPICS: topics per creation phase
	partitions    int32         // partitions per topic
	rf            int16         // replication factor
	requesters    int           // concurrent CreateTopics requesters in phase 3
	window        time.Duration // KRAFTD_BENCH_WINDOW: heartbeat measuring window
	sides         []string      // KRAFTD_BENCH_SIDES: "kraftd,apache"
	apacheVersion string
}

func benchConfigFromEnv(b *testing.B) benchConfig {
	c := benchConfig{brokers: 1000, topics: 1000, partitions: 10, rf: 3, requesters: 64,
		window: 20 * time.Second, sides: []string{"kraftd", "apache"}, apacheVersion: "4.1.2"}
	envInt := func(name string, dst *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive integer", name, v)
			}
			*dst = n
		}
	}
	envInt("KRAFTD_BENCH_BROKERS", &c.brokers)
	envInt("KRAFTD_BENCH_TOPICS", &c.topics)
	if v := os.Getenv("KRAFTD_BENCH_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("KRAFTD_BENCH_WINDOW=%q: want a duration such as 20s", v)
		}
		c.window = d
	}
	if v := os.Getenv("KRAFTD_BENCH_SIDES"); v != "" {
		c.sides = strings.Split(v, ",")
	}
	if c.brokers < int(c.rf) {
		b.Fatalf("KRAFTD_BENCH_BROKERS=%d: replication factor %d needs at least that many brokers", c.brokers, c.rf)
	}
	return c
}

// controllerQuorum is one three-node quorum under test.
type controllerQuorum struct {
	name      string
	clusterID string
	voters    map[int32]string
	pids      map[int32]int // node id -> process id
	procs     map[int32]*Process
	dirs      map[int32]string // node id -> its __cluster_metadata-0 directory
	pprof     map[int32]string // node id -> its pprof listener (KRAFTD_BENCH_PROFILE)
	stop      func()
}

// sideFigures are one implementation's measurements.
type sideFigures struct {
	idleCores              float64 // controllers' CPU seconds per second before any broker
	unfencedAfter          time.Duration
	heartbeats             []time.Duration // phase 1 window
	floor                  []time.Duration // ApiVersions round trips to the leader in the window
	heartbeatCores         float64         // controllers' CPU seconds per second in the window
	leaderCores            float64         // the active controller's share of it
	sequential, parallel   *TopicLoad
	sequentialCPU          time.Duration
	parallelCPU            time.Duration
	heartbeatsWhileCreated []time.Duration // during phase 3
	leaderObserverFetches  int64
	brokerErrors           string
	load                   []string  // load average at the start of each phase
	steal                  []float64 // % of CPU time the hypervisor stole in the window, sequential and parallel phases
}

// BenchmarkControllerSideBySide runs the same workload against a
// three-node kraftd quorum and a three-node Apache quorum, one after the
// other, with simulated brokers (SimBroker) written in Go:
//
//  1. the brokers register and heartbeat until unfenced; then heartbeat
//     latency and the controllers' CPU are measured over a window;
//  2. topics (10 partitions, RF 3) are created one CreateTopics at a time,
//     sent straight to the active controller: latency;
//  3. as many again from 64 concurrent requesters: partitions per second.
//
// It prints a table of both sides, their ratio and the targets.
func BenchmarkControllerSideBySide(b *testing.B) {
	cfg := benchConfigFromEnv(b)
	figures := map[string]*sideFigures{}
	for _, side := range cfg.sides {
		var q *controllerQuorum
		switch side {
		case "kraftd":
			q = startKraftdBenchQuorum(b, nil)
		case "apache":
			q = startApacheBenchQuorum(b, cfg.apacheVersion, nil, "")
		default:
			b.Fatalf("KRAFTD_BENCH_SIDES: unknown side %q (kraftd, apache)", side)
		}
		figures[side] = runSide(b, cfg, q)
		q.stop()
	}
	printSideBySide(b, cfg, figures)
}

// startKraftdBenchQuorum starts three kraftd controllers; props add to or
// override their configuration.
func startKraftdBenchQuorum(b *testing.B, props map[string]string) *controllerQuorum {
	b.Helper()
	ports := FreePorts(b, 3)
	q := &controllerQuorum{name: "kraftd", clusterID: NewUUID(), voters: map[int32]string{}, pids: map[int32]int{},
		procs: map[int32]*Process{}, dirs: map[int32]string{}, pprof: map[int32]string{}}
	var voters []string
	for i, p := range ports {
		q.voters[int32(i+1)] = Addr(p)
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, Addr(p)))
	}
	var procs []*Process
	for i, p := range ports {
		id := i + 1
		dir := filepath.Join(b.TempDir(), "metadata")
		q.dirs[int32(id)] = filepath.Join(dir, storage.MetadataLogDirName)
		extra := map[string]string{"controller.quorum.voters": strings.Join(voters, ",")}
		maps.Copy(extra, props)
		profile, addr := profileProps(b)
		maps.Copy(extra, profile)
		q.pprof[int32(id)] = addr
		conf := WriteKraftdConfig(b, int32(id), Addr(p), dir, extra)
		format := NewProcess(b, fmt.Sprintf("kraftd-format-%d", id), KraftdBinary(b), "format", "--config", conf, "--cluster-id", q.clusterID,
			"--release-version", brokerQuorumRelease)
		format.Start()
		if err := format.Wait(time.Minute); err != nil {
			b.Fatalf("format kraftd node %d: %v\n%s", id, err, format.Output())
		}
		// The default log level (info), as Apache runs at INFO: both
		// sides pay for what they log in production.
		procs = append(procs, StartKraftd(b, fmt.Sprintf("kraftd-%d", id), "start", "--config", conf))
	}
	for i, p := range procs {
		q.pids[int32(i+1)] = p.PID()
		q.procs[int32(i+1)] = p
	}
	q.stop = func() { StopAll(procs...) }
	WaitLeader(b, addrsOfMap(q.voters), nil)
	return q
}

// startApacheBenchQuorum starts three Apache controllers; props add to or
// override their server.properties, and heap is their -Xmx ("": the
// launcher's 512m). They run the production JVM profile (G1, the full
// JIT), not the tests' quick-start one: the figures compare Apache's speed
// with kraftd's.
func startApacheBenchQuorum(b *testing.B, version string, props map[string]string, heap string) *controllerQuorum {
	b.Helper()
	ReserveJVMs(b, 3)
	nodes, clusterID := NewApacheStaticQuorumWith(b, version, 3, props)
	for _, n := range nodes {
		n.JVM = JVM{Profile: ProductionProfile, Heap: heap}
	}
	StartApache(b, nodes...)
	q := &controllerQuorum{name: "Apache " + version, clusterID: clusterID, voters: map[int32]string{}, pids: map[int32]int{},
		procs: map[int32]*Process{}, dirs: map[int32]string{}}
	var procs []*Process
	for _, n := range nodes {
		q.voters[int32(n.NodeID)] = n.Addr()
		q.pids[int32(n.NodeID)] = n.Proc.PID()
		q.procs[int32(n.NodeID)] = n.Proc
		q.dirs[int32(n.NodeID)] = n.LogDir()
		procs = append(procs, n.Proc)
	}
	q.stop = func() { StopAll(procs...) }
	WaitLeader(b, Addrs(nodes...), nil)
	return q
}

func addrsOfMap(m map[int32]string) []string {
	var out []string
	for id := int32(1); int(id) <= len(m); id++ {
		out = append(out, m[id])
	}
	return out
}

// idleWindow is how long the quorum's CPU is measured before brokers come.
const idleWindow = 5 * time.Second

// brokerIDBase keeps simulated broker ids clear of the controllers' 1..3.
const brokerIDBase = 100

func runSide(b *testing.B, cfg benchConfig, q *controllerQuorum) *sideFigures {
	b.Helper()
	f := &sideFigures{}
	cpuOf := func(pids ...int) time.Duration {
		d, err := TotalCPU(pids...)
		if err != nil {
			b.Fatalf("%s: controller CPU: %v", q.name, err)
		}
		return d
	}
	cpu := func() time.Duration { return cpuOf(slices.Collect(maps.Values(q.pids))...) }

	// What the quorum burns with no broker at all (its periodic NoOp
	// records, followers' fetches), to tell the heartbeats' cost apart.
	before, began := cpu(), time.Now()
	time.Sleep(idleWindow)
	f.idleCores = (cpu() - before).Seconds() / time.Since(began).Seconds()
	phase := func(what string) {
		f.load = append(f.load, LoadAverage())
		b.Logf("%s: %s (load average %s)", q.name, what, LoadAverage())
	}

	phase(fmt.Sprintf("phase 1: %d simulated brokers register", cfg.brokers))
	fleet, err := StartSimFleet(q.clusterID, q.voters, brokerIDBase, cfg.brokers)
	if err != nil {
		b.Fatalf("%s: %v", q.name, err)
	}
	defer fleet.Stop()
	b.Logf("%s: %s", q.name, fleet.FeatureSummary)
	if f.unfencedAfter, err = fleet.WaitUnfenced(5 * time.Minute); err != nil {
		b.Fatalf("%s: %v", q.name, err)
	}
	// Every broker is in its steady 2 s rhythm after one more interval.
	time.Sleep(HeartbeatInterval + time.Second)
	fleet.SetPhase("window")
	leaderAddr, _, err := fleet.Locator().Leader(context.Background())
	if err != nil {
		b.Fatalf("%s: %v", q.name, err)
	}
	leaderPid := q.pids[fleet.Locator().LeaderID()]
	probeCtx, stopProbe := context.WithCancel(context.Background())
	floor := make(chan []time.Duration, 1)
	go func() { floor <- ProbeRoundTrips(probeCtx, leaderAddr, 20*time.Millisecond) }()
	fleet.Heartbeats().Start()
	steal := StartSteal()
	before, leaderBefore, began := cpu(), cpuOf(leaderPid), time.Now()
	time.Sleep(cfg.window)
	f.steal = append(f.steal, steal.Percent())
	elapsed := time.Since(began).Seconds()
	f.heartbeatCores = (cpu() - before).Seconds() / elapsed
	f.leaderCores = (cpuOf(leaderPid) - leaderBefore).Seconds() / elapsed
	f.heartbeats = fleet.Heartbeats().Stop()
	stopProbe()
	f.floor = <-floor

	ctx := context.Background()
	names := func(prefix string) []string {
		out := make([]string, cfg.topics)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%05d", prefix, i)
		}
		return out
	}
	phase(fmt.Sprintf("phase 2: %d topics one at a time", cfg.topics))
	fleet.SetPhase("sequential")
	before, steal = cpu(), StartSteal()
	if f.sequential, err = CreateTopicsDirect(ctx, fleet.Locator(), names("sequential"), cfg.partitions, cfg.rf, 1); err != nil {
		b.Fatalf("%s: %v", q.name, err)
	}
	f.sequentialCPU = cpu() - before
	f.steal = append(f.steal, steal.Percent())

	phase(fmt.Sprintf("phase 3: %d topics from %d requesters", cfg.topics, cfg.requesters))
	fleet.SetPhase("parallel")
	fleet.Heartbeats().Start()
	before, steal = cpu(), StartSteal()
	if f.parallel, err = CreateTopicsDirect(ctx, fleet.Locator(), names("parallel"), cfg.partitions, cfg.rf, cfg.requesters); err != nil {
		b.Fatalf("%s: %v", q.name, err)
	}
	f.parallelCPU = cpu() - before
	f.steal = append(f.steal, steal.Percent())
	f.heartbeatsWhileCreated = fleet.Heartbeats().Stop()

	f.leaderObserverFetches = fleet.Watcher().Fetches()
	f.brokerErrors = fleet.Errors()
	b.Logf("%s: done; broker errors: %s", q.name, f.brokerErrors)
	return f
}

// tableRow is one figure of the side-by-side table.
type tableRow struct {
	name        string
	unit        string
	value       func(*sideFigures) float64
	lowerBetter bool
	target      float64 // kraftd's advantage it should reach; 0 for none
}

func printSideBySide(b *testing.B, cfg benchConfig, figures map[string]*sideFigures) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	partsPerSec := func(l *TopicLoad) float64 {
		return float64(len(l.Latencies)) * float64(cfg.partitions) / l.Elapsed.Seconds()
	}
	rows := []tableRow{
		{"all brokers unfenced after", "s", func(f *sideFigures) float64 { return f.unfencedAfter.Seconds() }, true, 0},
		{"heartbeat p50", "ms", func(f *sideFigures) float64 { return ms(Percentile(f.heartbeats, 0.50)) }, true, 0},
		{"heartbeat p99", "ms", func(f *sideFigures) float64 { return ms(Percentile(f.heartbeats, 0.99)) }, true, 10},
		{"ApiVersions p99 in window (floor)", "ms", func(f *sideFigures) float64 { return ms(Percentile(f.floor, 0.99)) }, true, 0},
		{"controller CPU before brokers (JVM: JIT)", "cores", func(f *sideFigures) float64 { return f.idleCores }, true, 0},
		{"controller CPU, heartbeat window", "cores", func(f *sideFigures) float64 { return f.heartbeatCores }, true, 1},
		{"  of which the active controller", "cores", func(f *sideFigures) float64 { return f.leaderCores }, true, 0},
		{"controller CPU per heartbeat over idle", "us", func(f *sideFigures) float64 {
			// Meaningless (shown as -) where the idle figure was inflated:
			// a JVM compiles its hot code in its first minute.
			return max(0, (f.heartbeatCores-f.idleCores)*cfg.window.Seconds()/float64(len(f.heartbeats))*1e6)
		}, true, 0},
		{"CreateTopics sequential p50", "ms", func(f *sideFigures) float64 { return ms(Percentile(f.sequential.Latencies, 0.50)) }, true, 0},
		{"CreateTopics sequential p99", "ms", func(f *sideFigures) float64 { return ms(Percentile(f.sequential.Latencies, 0.99)) }, true, 10},
		{"controller CPU, sequential creates", "s", func(f *sideFigures) float64 { return f.sequentialCPU.Seconds() }, true, 1},
		{"CreateTopics parallel throughput", "partitions/s", func(f *sideFigures) float64 { return partsPerSec(f.parallel) }, false, 5},
		{"CreateTopics parallel p99", "ms", func(f *sideFigures) float64 { return ms(Percentile(f.parallel.Latencies, 0.99)) }, true, 0},
		{"controller CPU, parallel creates", "s", func(f *sideFigures) float64 { return f.parallelCPU.Seconds() }, true, 1},
		{"heartbeat p99 during parallel creates", "ms", func(f *sideFigures) float64 { return ms(Percentile(f.heartbeatsWhileCreated, 0.99)) }, true, 0},
	}
	kraftd, apache := figures["kraftd"], figures["apache"]
	var out strings.Builder
	fmt.Fprintf(&out, "\nController side by side: %d simulated brokers, %d+%d topics of %d partitions (RF %d), %d parallel requesters, %v heartbeat window\n",
		cfg.brokers, cfg.topics, cfg.topics, cfg.partitions, cfg.rf, cfg.requesters, cfg.window)
	fmt.Fprintf(&out, "%-42s %-13s %12s %12s %10s %8s\n", "figure", "unit", "kraftd", "Apache "+cfg.apacheVersion, "kraftd adv", "target")
	cell := func(f *sideFigures, r tableRow) string {
		if f == nil || r.value(f) <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", r.value(f))
	}
	for _, r := range rows {
		adv, target := "-", "-"
		if kraftd != nil && apache != nil {
			k, a := r.value(kraftd), r.value(apache)
			ratio := k / a
			if r.lowerBetter {
				ratio = a / k
			}
			if k > 0 && a > 0 {
				adv = fmt.Sprintf("%.2fx", ratio)
			}
			if r.target > 0 && k > 0 && a > 0 {
				verdict := "met"
				if ratio < r.target {
					verdict = "MISSED"
				}
				target = fmt.Sprintf(">=%gx %s", r.target, verdict)
			}
			if k > 0 && a > 0 {
				b.ReportMetric(ratio, "adv_"+strings.NewReplacer(" ", "_", ",", "").Replace(r.name))
			}
		}
		fmt.Fprintf(&out, "%-42s %-13s %12s %12s %10s %s\n", r.name, r.unit, cell(kraftd, r), cell(apache, r), adv, target)
	}
	out.WriteString("(kraftd adv: Apache/kraftd for lower-is-better figures, kraftd/Apache for throughput; CPU target means no more CPU than Apache)\n")
	for _, side := range []string{"kraftd", "apache"} {
		if f := figures[side]; f != nil {
			fmt.Fprintf(&out, "%s: %d heartbeats in the window, %d during parallel creates, %d observer fetches, %d CreateTopics retries, load average at phase starts %v, CPU stolen by the hypervisor in window/sequential/parallel %.1f%%/%.1f%%/%.1f%%; broker errors: %s\n",
				side, len(f.heartbeats), len(f.heartbeatsWhileCreated), f.leaderObserverFetches, f.sequential.Retries+f.parallel.Retries, f.load, f.steal[0], f.steal[1], f.steal[2], f.brokerErrors)
		}
	}
	fmt.Print(out.String())
}
