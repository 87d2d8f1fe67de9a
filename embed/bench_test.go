package embed

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Load shapes of BenchmarkQuorumCommit.
const (
	benchRecordBytes = 100 // encoded value of each proposed metadata record

	// Phase lengths: long enough for a stable p99 (thousands of samples at
	// millisecond latencies), short enough that the whole benchmark stays
	// well under two minutes.
	benchPhase        = 5 * time.Second
	benchWarmUp       = 1 * time.Second
	benchFloorBudget  = 2 * time.Second
	benchFloorSamples = 5000

	benchManyProposers = 64
	// Saturation: enough proposers with enough records each that the quorum
	// loop, not the proposers' wait for their commit, is the bottleneck.
	benchSaturationProposers = 64
	benchSaturationBatch     = 100

	benchTargetRecordsPerSecond = 100_000
	benchFloorMultiple          = 3 // p99 commit at 1 proposer must stay within 3 × floor
)

// BenchmarkQuorumCommit measures commit latency and throughput of a
// three-controller kraftd quorum beside the physical floor of the same
// machine in the same run: one fsync of the data directory's filesystem plus
// one loopback TCP round trip (docs/architecture.md, "Performance stance").
//
// The three controllers run inside this benchmark's process rather than as
// three processes: each is a real Node and Server with its own formatted
// directory (real disk, real fsync) and they talk over real loopback TCP, but
// they share one Go runtime and its scheduler. That is the accepted setup;
// the output says so.
//
// The work is done once whatever b.N is; run it with -benchtime 1x.
func BenchmarkQuorumCommit(b *testing.B) {
	loadBefore := loadAverage()
	floorDir := b.TempDir()
	fsyncs := measureFsync(b, floorDir, benchFloorSamples, benchFloorBudget)
	rtts := measureLoopbackRTT(b, benchFloorSamples, benchFloorBudget/2)
	floorP50 := percentile(fsyncs, 0.50) + percentile(rtts, 0.50)
	floorP99 := percentile(fsyncs, 0.99) + percentile(rtts, 0.99)

	nodes := startBenchQuorum(b, 3)
	leader := waitBenchLeader(b, nodes, 30*time.Second)
	rec := paddedConfigRecord(b, benchRecordBytes)

	proposeUnderLoad(b, leader, rec, benchManyProposers, 1, benchWarmUp)
	single := proposeUnderLoad(b, leader, rec, 1, 1, benchPhase)
	many := proposeUnderLoad(b, leader, rec, benchManyProposers, 1, benchPhase)
	saturated := proposeUnderLoad(b, leader, rec, benchSaturationProposers, benchSaturationBatch, benchPhase)

	singleP50, singleP99 := percentile(single.latencies, 0.50), percentile(single.latencies, 0.99)
	manyP50, manyP99 := percentile(many.latencies, 0.50), percentile(many.latencies, 0.99)
	rate := saturated.recordsPerSecond()

	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(fsyncs, 0.50)), "fsync-p50-ms")
	b.ReportMetric(ms(percentile(fsyncs, 0.99)), "fsync-p99-ms")
	b.ReportMetric(ms(percentile(rtts, 0.50)), "rtt-p50-ms")
	b.ReportMetric(ms(percentile(rtts, 0.99)), "rtt-p99-ms")
	b.ReportMetric(ms(singleP50), "commit-1p-p50-ms")
	b.ReportMetric(ms(singleP99), "commit-1p-p99-ms")
	b.ReportMetric(ms(manyP50), "commit-64p-p50-ms")
	b.ReportMetric(ms(manyP99), "commit-64p-p99-ms")
	b.ReportMetric(many.recordsPerSecond(), "records/s-64p")
	b.ReportMetric(rate, "records/s-saturated")
	b.ReportMetric(float64(saturated.cpuPerRecord())/float64(time.Microsecond), "cpu-µs/record-saturated")

	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\nBenchmarkQuorumCommit: 3 kraftd controllers IN ONE PROCESS (not 3 processes): real Node+Server each,\n")
	fmt.Fprintf(&out, "  own formatted directory, real fsync under %s, loopback TCP, static voters; %d-byte ConfigRecords.\n", os.TempDir(), benchRecordBytes)
	fmt.Fprintf(&out, "  floor, same filesystem and run: fsync (write 100 B + fsync) p50 %s p99 %s (%d samples);\n",
		fmtDur(percentile(fsyncs, 0.50)), fmtDur(percentile(fsyncs, 0.99)), len(fsyncs))
	fmt.Fprintf(&out, "  loopback TCP round trip p50 %s p99 %s (%d samples); floor = fsync + RTT: p50 %s p99 %s\n",
		fmtDur(percentile(rtts, 0.50)), fmtDur(percentile(rtts, 0.99)), len(rtts), fmtDur(floorP50), fmtDur(floorP99))
	fmt.Fprintf(&out, "  %-44s %12s   %-26s %s\n", "figure", "ours", "reference", "target")
	row := func(name, ours, ref, target string) {
		fmt.Fprintf(&out, "  %-44s %12s   %-26s %s\n", name, ours, ref, target)
	}
	row("commit p50, 1 proposer", fmtDur(singleP50), fmt.Sprintf("%d × floor p50 = %s", benchFloorMultiple, fmtDur(benchFloorMultiple*floorP50)), "-")
	row("commit p99, 1 proposer", fmtDur(singleP99), fmt.Sprintf("%d × floor p99 = %s", benchFloorMultiple, fmtDur(benchFloorMultiple*floorP99)),
		verdict(singleP99 <= benchFloorMultiple*floorP99))
	row(fmt.Sprintf("commit p50, %d proposers", benchManyProposers), fmtDur(manyP50), fmt.Sprintf("%d × floor p50 = %s", benchFloorMultiple, fmtDur(benchFloorMultiple*floorP50)), "-")
	row(fmt.Sprintf("commit p99, %d proposers", benchManyProposers), fmtDur(manyP99), fmt.Sprintf("%d × floor p99 = %s", benchFloorMultiple, fmtDur(benchFloorMultiple*floorP99)), "-")
	row(fmt.Sprintf("records/s, %d proposers × 1 record", benchManyProposers), fmt.Sprintf("%.0f", many.recordsPerSecond()), "-", "-")
	row(fmt.Sprintf("records/s, %d proposers × %d records", benchSaturationProposers, benchSaturationBatch), fmt.Sprintf("%.0f", rate),
		fmt.Sprintf("%d", benchTargetRecordsPerSecond), verdict(rate >= benchTargetRecordsPerSecond))
	fmt.Fprintf(&out, "  samples: 1 proposer %d, %d proposers %d, saturation %d proposals\n",
		len(single.latencies), benchManyProposers, len(many.latencies), len(saturated.latencies))
	fmt.Fprintf(&out, "  process CPU (3 nodes + proposers): 1 proposer %.2f cores busy, %d proposers %.2f, saturation %.2f of %d;\n",
		single.coresBusy(), benchManyProposers, many.coresBusy(), saturated.coresBusy(), runtime.NumCPU())
	fmt.Fprintf(&out, "  CPU per committed record at saturation %.1fµs; load average before %s, after %s\n",
		float64(saturated.cpuPerRecord())/float64(time.Microsecond), loadBefore, loadAverage())
	fmt.Print(out.String())
}

// fmtDur prints a latency in milliseconds with microsecond precision, which
// keeps the table's columns comparable.
func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
}
