package compat

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// failoverFigures are one implementation's leader kills.
type failoverFigures struct {
	side               string
	toLeader, toWrite  []time.Duration
	acked, lost, kills int
	linearizable       bool
}

// BenchmarkFailoverSideBySide SIGKILLs the leader of a three-node kraftd
// quorum, then of a three-node Apache quorum, KRAFTD_BENCH_KILLS times each
// (20 by default) with writers running and default timeouts, and prints for
// each: kill to a new leader, kill to the first write a survivor
// acknowledged, and acknowledged writes missing from any log afterwards.
// KRAFTD_BENCH_SIDES=kraftd (or apache) runs one side.
func BenchmarkFailoverSideBySide(b *testing.B) {
	kills := 20
	if v := os.Getenv("KRAFTD_BENCH_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("KRAFTD_BENCH_KILLS=%q: want a positive integer", v)
		}
		kills = n
	}
	sides := []string{KindKraftd, KindApache}
	if v := os.Getenv("KRAFTD_BENCH_SIDES"); v != "" {
		sides = strings.Split(v, ",")
	}
	const apacheVersion = "4.1.2"
	var figures []failoverFigures
	for range b.N {
		figures = figures[:0]
		for _, side := range sides {
			b.Run(side, func(b *testing.B) {
				figures = append(figures, benchFailover(b, side, apacheVersion, kills))
			})
		}
	}
	// To standard output: a parent benchmark's log is not printed.
	fmt.Print(failoverTable(figures, apacheVersion))
	for _, f := range figures {
		if f.lost > 0 || !f.linearizable {
			b.Errorf("%s lost %d acknowledged writes (linearizable: %v)", f.side, f.lost, f.linearizable)
		}
	}
}

// benchFailover runs one side: kills leaders one after another, each once
// the quorum is whole and caught up again.
func benchFailover(b *testing.B, side, apacheVersion string, kills int) failoverFigures {
	opts := MixedOptions{Kinds: []string{side, side, side}}
	if side == KindApache {
		KafkaCache(b, apacheVersion)
		ReserveJVMs(b, 3)
		opts.Version = apacheVersion
		// Apache as it runs in production, not the tests' quick-start JVM:
		// the figures compare its failover with kraftd's.
		opts.ApacheJVM = JVM{Profile: ProductionProfile}
	}
	members, clusterID := NewMixedStaticQuorum(b, opts)
	c := StartChaosCluster(b, members, clusterID, chaosWriters)
	f := failoverFigures{side: side, kills: kills}
	restarted := time.Now()
	for i := range kills {
		cur := c.Healthy(b, restarted)
		leader := MemberByID(members, cur.LeaderID)
		r := c.Kill(b, leader, cur)
		f.toLeader, f.toWrite = append(f.toLeader, r.ToLeader), append(f.toWrite, r.ToWrite)
		b.Logf("%s kill %d: leader %d (epoch %d): new leader after %v, first write after %v", side, i+1, leader.ID, r.Epoch,
			r.ToLeader.Round(time.Millisecond), r.ToWrite.Round(time.Millisecond))
		leader.Start(b)
		restarted = time.Now()
	}
	lost, nonLinearizable := c.StopAndCheck(b)
	for _, err := range lost {
		b.Log(err)
	}
	if nonLinearizable != nil {
		b.Log(nonLinearizable)
	}
	f.acked, f.lost, f.linearizable = c.History.Acknowledged(), len(lost), nonLinearizable == nil
	b.Logf("%s writes: %s", side, c.History.Summary())
	return f
}

// failoverTable prints the figures side by side, with Apache's p99 over
// kraftd's when both ran.
func failoverTable(figures []failoverFigures, apacheVersion string) string {
	var s strings.Builder
	stats := func(d []time.Duration) string {
		ms := func(x time.Duration) string { return strconv.FormatInt(x.Milliseconds(), 10) }
		return fmt.Sprintf("%6s %6s %6s %6s", ms(slices.Min(d)), ms(Percentile(d, 0.5)), ms(Percentile(d, 0.99)), ms(slices.Max(d)))
	}
	fmt.Fprintf(&s, "Failover after SIGKILL of the leader (three controllers, default timeouts, writes running; Apache %s)\n", apacheVersion)
	fmt.Fprintf(&s, "%-8s %5s | %-27s | %-27s | %7s %5s\n", "", "kills", "kill -> new leader (ms)", "kill -> first write (ms)", "acked", "lost")
	fmt.Fprintf(&s, "%-8s %5s | %6s %6s %6s %6s | %6s %6s %6s %6s |\n", "", "", "min", "p50", "p99", "max", "min", "p50", "p99", "max")
	p99 := map[string]time.Duration{}
	for _, f := range figures {
		if len(f.toWrite) == 0 {
			continue
		}
		fmt.Fprintf(&s, "%-8s %5d | %s | %s | %7d %5d\n", f.side, f.kills, stats(f.toLeader), stats(f.toWrite), f.acked, f.lost)
		p99[f.side] = Percentile(f.toWrite, 0.99)
	}
	if k, a := p99[KindKraftd], p99[KindApache]; k > 0 && a > 0 {
		fmt.Fprintf(&s, "kill -> first write, p99: Apache / kraftd = %.1fx (target >= 5x; kraftd target <= 300 ms)\n", float64(a)/float64(k))
	}
	return s.String()
}
