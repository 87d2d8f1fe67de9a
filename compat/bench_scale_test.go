package compat

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// scaleConfig sizes BenchmarkControllerScale. The defaults are issue 18's
// workload (a thousand brokers, a million partitions); every size has an
// environment variable to shrink it for a quick run.
type scaleConfig struct {
	brokers       int           // KRAFTD_SCALE_BROKERS
	racks         int           // KRAFTD_SCALE_RACKS: brokers are spread over this many racks
	topics        int           // KRAFTD_SCALE_TOPICS
	partitions    int32         // KRAFTD_SCALE_PARTITIONS: per topic
	rf            int16         // replication factor
	requesters    int           // concurrent CreateTopics requesters while loading
	observers     int           // KRAFTD_SCALE_OBSERVERS: catch-up storm
	stormRounds   int           // KRAFTD_SCALE_STORM_ROUNDS: storms one after the other
	window        time.Duration // KRAFTD_SCALE_WINDOW: steady-state and baseline windows
	snapInterval  time.Duration // KRAFTD_SCALE_SNAPSHOT_INTERVAL: metadata.log.max.snapshot.interval.ms
	apacheHeap    string        // KRAFTD_SCALE_APACHE_HEAP: the Apache controllers' -Xmx
	sides         []string      // KRAFTD_BENCH_SIDES: "kraftd,apache"
	apacheVersion string
}

func scaleConfigFromEnv(b *testing.B) scaleConfig {
	c := scaleConfig{brokers: 1000, racks: 10, topics: 100_000, partitions: 10, rf: 3, requesters: 64, observers: 100, stormRounds: 3,
		window: 20 * time.Second, snapInterval: 2 * time.Minute, apacheHeap: "4g",
		sides: []string{"kraftd", "apache"}, apacheVersion: "4.1.2"}
	envInt := func(name string, dst *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive integer", name, v)
			}
			*dst = n
		}
	}
	envDuration := func(name string, dst *time.Duration) {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				b.Fatalf("%s=%q: want a duration such as 20s", name, v)
			}
			*dst = d
		}
	}
	envInt("KRAFTD_SCALE_BROKERS", &c.brokers)
	envInt("KRAFTD_SCALE_RACKS", &c.racks)
	envInt("KRAFTD_SCALE_TOPICS", &c.topics)
	partitions := int(c.partitions)
	envInt("KRAFTD_SCALE_PARTITIONS", &partitions)
	c.partitions = int32(partitions)
	envInt("KRAFTD_SCALE_OBSERVERS", &c.observers)
	envInt("KRAFTD_SCALE_STORM_ROUNDS", &c.stormRounds)
	envDuration("KRAFTD_SCALE_WINDOW", &c.window)
	envDuration("KRAFTD_SCALE_SNAPSHOT_INTERVAL", &c.snapInterval)
	if v := os.Getenv("KRAFTD_SCALE_APACHE_HEAP"); v != "" {
		c.apacheHeap = v
	}
	if v := os.Getenv("KRAFTD_BENCH_SIDES"); v != "" {
		c.sides = strings.Split(v, ",")
	}
	// Racks must be at least the replication factor for rack-aware
	// placement, and a rack must hold brokers other than the watcher's.
	if c.racks < int(c.rf) || c.brokers < 2*c.racks {
		b.Fatalf("KRAFTD_SCALE_RACKS=%d with %d brokers: want at least %d racks and two brokers a rack", c.racks, c.brokers, c.rf)
	}
	return c
}

// scaleProps are the controllers' settings both sides get: snapshots by
// time at an interval longer than a measuring window, so that one lands in
// the snapshot phase and none in the steady-state window after it.
func scaleProps(cfg scaleConfig) map[string]string {
	return map[string]string{"metadata.log.max.snapshot.interval.ms": fmt.Sprint(cfg.snapInterval.Milliseconds())}
}

// BenchmarkControllerScale is issue 18's workload against three kraftd
// controllers and then three Apache controllers: cfg.brokers simulated
// brokers on cfg.racks racks register, cfg.topics topics of cfg.partitions
// partitions (RF 3) are created through the active controller, and then:
//
//  1. snapshot: heartbeat p99 before and while the leader writes its next
//     snapshot, the time and memory that takes, its bytes per partition;
//  2. steady state: CPU and resident memory while every broker heartbeats;
//  3. catch-up storm: cfg.observers new observers fetch the whole log (or
//     the snapshot the leader sends them to) while a writer creates topics,
//     cfg.stormRounds times over; then the same writer alone, the latency
//     the storm's is held to;
//  4. one broker fails (the one leading most partitions), then one rack;
//  5. the active controller is SIGKILLed.
//
// It prints every figure beside Apache's with the ratio and the CPU time
// the hypervisor stole in each phase.
func BenchmarkControllerScale(b *testing.B) {
	cfg := scaleConfigFromEnv(b)
	figures := map[string]*scaleFigures{}
	var features []kmsg.BrokerRegistrationRequestFeature // the first side's, for every side
	for _, side := range cfg.sides {
		var q *controllerQuorum
		switch side {
		case "kraftd":
			q = startKraftdBenchQuorum(b, scaleProps(cfg))
		case "apache":
			q = startApacheBenchQuorum(b, cfg.apacheVersion, scaleProps(cfg), cfg.apacheHeap)
		default:
			b.Fatalf("KRAFTD_BENCH_SIDES: unknown side %q (kraftd, apache)", side)
		}
		figures[side], features = runScaleSide(b, cfg, q, features)
		q.stop()
	}
	fmt.Print(scaleTable(cfg, figures))
}

// scaleRun is one side's run in progress.
type scaleRun struct {
	b       *testing.B
	cfg     scaleConfig
	q       *controllerQuorum
	fleet   *SimFleet
	leaders *LeaderTracker
	f       *scaleFigures
	killed  map[int32]bool
}

// runScaleSide runs the workload on q with brokers registering with
// features (nil: the ranges q lists) and returns the figures and the
// features the brokers used.
func runScaleSide(b *testing.B, cfg scaleConfig, q *controllerQuorum, features []kmsg.BrokerRegistrationRequestFeature) (*scaleFigures, []kmsg.BrokerRegistrationRequestFeature) {
	b.Helper()
	r := &scaleRun{b: b, cfg: cfg, q: q, leaders: NewLeaderTracker(), f: newScaleFigures(), killed: map[int32]bool{}}
	r.logf("%d simulated brokers on %d racks register", cfg.brokers, cfg.racks)
	fleet, err := StartSimFleetWith(q.clusterID, q.voters, brokerIDBase, cfg.brokers, SimFleetOptions{
		Rack:     func(i int) string { return fmt.Sprintf("rack-%d", i%cfg.racks) },
		Leaders:  r.leaders,
		Features: features,
	})
	if err != nil {
		b.Fatalf("%s: %v", q.name, err)
	}
	defer fleet.Stop()
	r.fleet = fleet
	r.logf("%s", fleet.FeatureSummary)
	unfenced, err := fleet.WaitUnfenced(10 * time.Minute)
	if err != nil {
		b.Fatalf("%s: %v", q.name, err)
	}
	r.f.set("load", "all brokers unfenced after", unfenced.Seconds())
	r.load()
	r.snapshot()
	r.steady()
	r.storm()
	r.steadyWrites()
	r.brokersFail("one broker", []int32{r.leaders.TopLeader(r.liveBrokers(""))})
	r.brokersFail("one rack", r.liveBrokers(r.rackToFail()))
	r.failover()
	r.f.brokerErrors = fleet.Errors()
	r.logf("done; broker errors: %s", r.f.brokerErrors)
	return r.f, fleet.Features()
}

func (r *scaleRun) logf(format string, args ...any) {
	r.b.Logf("%s: %s (load average %s)", r.q.name, fmt.Sprintf(format, args...), LoadAverage())
}

func (r *scaleRun) fatalf(format string, args ...any) {
	r.b.Fatalf("%s: %s", r.q.name, fmt.Sprintf(format, args...))
}

// leaderPID is the active controller's process id (by the fleet's locator).
func (r *scaleRun) leaderPID() (int32, int) {
	if _, _, err := r.fleet.Locator().Leader(context.Background()); err != nil {
		r.fatalf("no leader: %v", err)
	}
	id := r.fleet.Locator().LeaderID()
	return id, r.q.pids[id]
}

// load creates the topics from cfg.requesters requesters and waits until
// the fleet's watcher has read every partition.
func (r *scaleRun) load() {
	cfg := r.cfg
	total := cfg.topics * int(cfg.partitions)
	r.logf("create %d topics of %d partitions (RF %d), %d partitions", cfg.topics, cfg.partitions, cfg.rf, total)
	names := make([]string, cfg.topics)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%06d", i)
	}
	r.fleet.SetPhase("load")
	steal := StartSteal()
	load, err := CreateTopicsDirect(context.Background(), r.fleet.Locator(), names, cfg.partitions, cfg.rf, cfg.requesters)
	if err != nil {
		r.fatalf("%v", err)
	}
	r.f.stealOf("load", steal)
	r.f.set("load", "CreateTopics throughput", float64(total)/load.Elapsed.Seconds())
	deadline := time.Now().Add(5 * time.Minute)
	for r.leaders.Partitions() < total {
		if time.Now().After(deadline) {
			r.fatalf("the watcher read %d of %d partitions", r.leaders.Partitions(), total)
		}
		time.Sleep(PollInterval)
	}
	if n := r.leaders.Skipped(); n > 0 {
		r.b.Logf("%s: the leader tracker skipped %d times (snapshot or undecodable record): its counts may be off", r.q.name, n)
	}
	_, pid := r.leaderPID()
	r.f.set("load", "active controller RSS after load", float64(mustRSS(r.b, pid))/(1<<20))
}

// liveBrokers lists the ids of brokers not killed, of one rack or all
// (""); the first broker, whose id the fleet's watcher fetches as, is never
// among them.
func (r *scaleRun) liveBrokers(rack string) []int32 {
	var out []int32
	for _, b := range r.fleet.Brokers[1:] {
		if !r.killed[b.ID] && (rack == "" || b.Rack == rack) {
			out = append(out, b.ID)
		}
	}
	return out
}

// rackToFail is a rack other than the first broker's and the failed one's.
func (r *scaleRun) rackToFail() string {
	for i := 1; i < r.cfg.racks; i++ {
		rack := fmt.Sprintf("rack-%d", i)
		if len(r.liveBrokers(rack)) == len(r.fleet.Brokers)/r.cfg.racks {
			return rack
		}
	}
	return "rack-1"
}
