package kit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/kit"
)

// BenchmarkClusterReady starts a three-broker cluster twice, on three
// kraftd controllers and on three Apache controllers of the same version
// (KRAFTD_BENCH_KAFKA, default 4.4.0), and prints, for each, the time from
// Start to the first acknowledged produce (formatting included: Apache's
// storage tool for Apache controllers, kraftd format for kraftd's) and the
// controllers' resident memory (VmRSS from /proc) once ready, then the
// ratios. The jars are fetched before the clock starts.
func BenchmarkClusterReady(b *testing.B) {
	version := kit.DefaultVersion
	if v := os.Getenv("KRAFTD_BENCH_KAFKA"); v != "" {
		version = v
	}
	if _, err := kit.FetchKafka(context.Background(), version, b.Logf); err != nil {
		b.Fatal(err)
	}
	sides := []struct {
		name string
		spec kit.Spec
	}{
		{"kraftd", kit.Spec{Brokers: 3, KraftdControllers: 3, Kafka: version, ReadyTimeout: benchReadyTimeout}},
		{"Apache " + version, kit.Spec{Brokers: 3, ApacheControllers: 3, Kafka: version, ReadyTimeout: benchReadyTimeout}},
	}
	ready := make([]time.Duration, len(sides))
	rss := make([]int64, len(sides))
	failed := make([]error, len(sides))
	for range b.N {
		for i, s := range sides {
			ready[i], rss[i], failed[i] = readySide(s.spec)
			if failed[i] != nil {
				first, _, _ := strings.Cut(failed[i].Error(), "\n")
				fmt.Printf("  %s: did not start: %s\n", s.name, first)
				continue
			}
			fmt.Printf("  %s: ready after %v, controllers' RSS %d MiB\n", s.name, ready[i].Round(10*time.Millisecond), rss[i]/1024)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("three Apache Kafka %s brokers, ready to take produce requests (load average %s at the end):\n", version, strings.Fields(string(load) + " ?")[0])
	fmt.Printf("  %-14s %12s %24s\n", "controllers", "ready after", "controllers' RSS (3)")
	for i, s := range sides {
		if failed[i] == nil {
			fmt.Printf("  %-14s %12v %21d MiB\n", s.name, ready[i].Round(10*time.Millisecond), rss[i]/1024)
		}
	}
	if failed[0] != nil || failed[1] != nil {
		b.Fatalf("a side did not start: %v", errors.Join(failed...))
	}
	fmt.Printf("  ratio Apache/kraftd: ready %.1fx sooner with kraftd (target 2x), controllers' memory %.1fx less (target 10x)\n",
		ready[1].Seconds()/ready[0].Seconds(), float64(rss[1])/float64(rss[0]))
	b.ReportMetric(ready[0].Seconds(), "kraftd-ready-s")
	b.ReportMetric(ready[1].Seconds(), "apache-ready-s")
	b.ReportMetric(float64(rss[0])/1024, "kraftd-controllers-MiB")
	b.ReportMetric(float64(rss[1])/1024, "apache-controllers-MiB")
}

// readySide starts one cluster, times it to ready, sums its controllers'
// RSS, and stops it.
func readySide(spec kit.Spec) (time.Duration, int64, error) {
	start := time.Now()
	c, err := kit.Start(context.Background(), spec)
	if err != nil {
		return 0, 0, err
	}
	defer c.Stop()
	took := time.Since(start)
	var sum int64
	for _, n := range c.Controllers() {
		kb, err := residentKB(n.PID())
		if err != nil {
			return 0, 0, err
		}
		sum += kb
	}
	return took, sum, nil
}

// benchReadyTimeout is long: this measures how long start-up takes, and a
// loaded machine must not turn a slow side into a failure.
const benchReadyTimeout = 15 * time.Minute

// residentKB is a process's VmRSS in KiB.
func residentKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
