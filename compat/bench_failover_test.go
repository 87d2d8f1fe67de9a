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

// benchFaults are the failover benchmark's faults of the leader, one
// column group each.
var benchFaults = []Fault{FaultKill, FaultPause, FaultPartition, FaultDisk}

// benchTakeover bounds the wait for a survivor to take over from a failed
// leader; a trial without a takeover by then is counted, not timed.
const benchTakeover = time.Minute

// faultFigures are one implementation's failovers from one fault.
type faultFigures struct {
	fault             Fault
	toLeader, toWrite []time.Duration
	none              int // trials without a takeover within benchTakeover
}

// failoverFigures are one implementation's trials.
type failoverFigures struct {
	side         string
	faults       []*faultFigures
	acked, lost  int
	linearizable bool
}

// BenchmarkFailoverSideBySide fails the leader of a three-node kraftd
// quorum, then of a three-node Apache 4.4.0 quorum, in each way of
// benchFaults, KRAFTD_BENCH_TRIALS times each way (20 by default; the
// ways take turns), with writers running and default timeouts, and prints
// for each: fault to a new leader, fault to the first write a survivor
// acknowledged, and acknowledged writes missing from any log afterwards.
// KRAFTD_BENCH_SIDES=kraftd (or apache) runs one side. It needs root (the
// faults of internal/nemesis).
func BenchmarkFailoverSideBySide(b *testing.B) {
	trials := 20
	if v := os.Getenv("KRAFTD_BENCH_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("KRAFTD_BENCH_TRIALS=%q: want a positive integer", v)
		}
		trials = n
	}
	sides := []string{KindKraftd, KindApache}
	if v := os.Getenv("KRAFTD_BENCH_SIDES"); v != "" {
		sides = strings.Split(v, ",")
	}
	const apacheVersion = "4.4.0"
	var figures []failoverFigures
	for range b.N {
		figures = figures[:0]
		for _, side := range sides {
			b.Run(side, func(b *testing.B) {
				figures = append(figures, benchFailover(b, side, apacheVersion, trials))
			})
		}
	}
	// To standard output: a parent benchmark's log is not printed.
	fmt.Print(failoverTable(figures, apacheVersion, trials))
	for _, f := range figures {
		if f.lost > 0 || !f.linearizable {
			b.Errorf("%s lost %d acknowledged writes (linearizable: %v)", f.side, f.lost, f.linearizable)
		}
	}
}

// benchFailover runs one side: fails leaders one after another, each once
// the quorum is whole and caught up again.
func benchFailover(b *testing.B, side, apacheVersion string, trials int) failoverFigures {
	opts := MixedOptions{Kinds: []string{side, side, side}}
	if side == KindApache {
		KafkaCache(b, apacheVersion)
		ReserveJVMs(b, 3)
		opts.Version = apacheVersion
		// Apache as it runs in production, not the tests' quick-start JVM:
		// the figures compare its failover with kraftd's.
		opts.ApacheJVM = JVM{Profile: ProductionProfile}
	}
	members, clusterID, n := NewNemesisQuorum(b, opts)
	c := StartChaosCluster(b, members, clusterID, chaosWriters)
	c.Nemesis = n
	f := failoverFigures{side: side}
	for _, fault := range benchFaults {
		f.faults = append(f.faults, &faultFigures{fault: fault})
	}
	healed := time.Now()
	for i := range trials {
		for _, ff := range f.faults {
			cur := c.Healthy(b, healed)
			leader := MemberByID(members, cur.LeaderID)
			r, heal := c.Inject(b, ff.fault, leader, cur, benchTakeover)
			heal()
			healed = time.Now()
			if r.ToLeader == 0 || r.ToWrite == 0 {
				ff.none++
				b.Logf("%s %s %d: leader %d (epoch %d): no takeover within %v", side, ff.fault, i+1, leader.ID, r.Epoch, benchTakeover)
				continue
			}
			ff.toLeader, ff.toWrite = append(ff.toLeader, r.ToLeader), append(ff.toWrite, r.ToWrite)
			b.Logf("%s %s %d: leader %d (epoch %d): new leader after %v, first write after %v", side, ff.fault, i+1, leader.ID, r.Epoch,
				r.ToLeader.Round(time.Millisecond), r.ToWrite.Round(time.Millisecond))
		}
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

// failoverTable prints the figures side by side, each fault's Apache p99
// over kraftd's when both ran.
func failoverTable(figures []failoverFigures, apacheVersion string, trials int) string {
	var s strings.Builder
	stats := func(d []time.Duration) string {
		if len(d) == 0 {
			return fmt.Sprintf("%6s %6s %6s %6s", "-", "-", "-", "-")
		}
		ms := func(x time.Duration) string { return strconv.FormatInt(x.Milliseconds(), 10) }
		return fmt.Sprintf("%6s %6s %6s %6s", ms(slices.Min(d)), ms(Percentile(d, 0.5)), ms(Percentile(d, 0.99)), ms(slices.Max(d)))
	}
	fmt.Fprintf(&s, "Failover from a failed leader (three controllers, default timeouts, writes running; %d trials a fault; Apache %s)\n", trials, apacheVersion)
	fmt.Fprintf(&s, "%-7s %-10s | %-27s | %-27s | %4s\n", "", "fault", "fault -> new leader (ms)", "fault -> first write (ms)", "none")
	fmt.Fprintf(&s, "%-7s %-10s | %6s %6s %6s %6s | %6s %6s %6s %6s |\n", "", "", "min", "p50", "p99", "max", "min", "p50", "p99", "max")
	p99 := map[string]map[Fault]time.Duration{}
	for _, f := range figures {
		p99[f.side] = map[Fault]time.Duration{}
		for _, ff := range f.faults {
			fmt.Fprintf(&s, "%-7s %-10s | %s | %s | %4d\n", f.side, ff.fault, stats(ff.toLeader), stats(ff.toWrite), ff.none)
			p99[f.side][ff.fault] = Percentile(ff.toWrite, 0.99)
		}
	}
	for _, f := range figures {
		fmt.Fprintf(&s, "%s: %d writes acknowledged, %d lost, linearizable: %v\n", f.side, f.acked, f.lost, f.linearizable)
	}
	for _, fault := range benchFaults {
		if k, a := p99[KindKraftd][fault], p99[KindApache][fault]; k > 0 && a > 0 {
			fmt.Fprintf(&s, "%s -> first write, p99: Apache / kraftd = %.1fx\n", fault, float64(a)/float64(k))
		}
	}
	s.WriteString("(none: trials without a new leader and a write within 1 min; issue 33's targets: kraftd p99 <= 500 ms, >= 4x Apache)\n")
	return s.String()
}
