package compat

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// snapshot measures the leader's next snapshot: heartbeat p99 over a
// baseline window, then while the snapshot's .checkpoint.part file exists;
// the time it existed, the leader's resident memory above its level before,
// and the finished file's bytes per partition.
func (r *scaleRun) snapshot() {
	cfg := r.cfg
	leaderID, pid := r.leaderPID()
	dir := r.q.dirs[leaderID]
	r.logf("snapshot: baseline heartbeats for %v, then wait up to %v for the next snapshot in %s", cfg.window, cfg.snapInterval+time.Minute, dir)
	r.fleet.SetPhase("snapshot")
	r.fleet.Heartbeats().Start()
	time.Sleep(cfg.window)
	r.f.set("snapshot", "heartbeat p99 before the snapshot", msOf(Percentile(r.fleet.Heartbeats().Stop(), 0.99)))

	existing := map[string]bool{}
	for _, p := range snapshotFiles(dir, ".checkpoint.part") {
		existing[p] = true
	}
	deadline := time.Now().Add(cfg.snapInterval + time.Minute)
	var part string
	for part == "" {
		if time.Now().After(deadline) {
			r.b.Logf("%s: no snapshot began within %v: no snapshot figures", r.q.name, cfg.snapInterval+time.Minute)
			return
		}
		for _, p := range snapshotFiles(dir, ".checkpoint.part") {
			if !existing[p] {
				part = p
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	began, steal := time.Now(), StartSteal()
	rss := startRSSPeak(pid)
	r.fleet.Heartbeats().Start()
	defer startProfiles(r.b, r.q.pprof[leaderID], "snapshot-leader", 3*time.Second, false).wait()
	for {
		if _, err := os.Stat(part); err != nil {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(began)
	during := r.fleet.Heartbeats().Stop()
	above := rss.stop()
	r.f.stealOf("snapshot", steal)
	r.f.set("snapshot", "snapshot write (.part file seen)", msOf(took))
	r.f.set("snapshot", "leader RSS above its level before", float64(above)/(1<<20))
	r.f.set("snapshot", "heartbeat p99 during the snapshot", msOf(Percentile(during, 0.99)))
	r.f.notes = append(r.f.notes, fmt.Sprintf("%d heartbeats during the snapshot", len(during)))
	final := strings.TrimSuffix(part, ".checkpoint.part")
	if i := strings.LastIndexByte(final, '-'); i > 0 && strings.Count(filepath.Base(final), "-") > 1 {
		final = final[:i] // kraftd's .part names carry a random suffix after the id
	}
	if st, err := os.Stat(final + ".checkpoint"); err == nil {
		r.f.set("snapshot", "snapshot bytes per partition", float64(st.Size())/float64(r.cfg.topics*int(r.cfg.partitions)))
	} else {
		r.b.Logf("%s: snapshot %s.checkpoint: %v", r.q.name, final, err)
	}
}

// snapshotsInProgress reports whether any controller has a snapshot's
// .checkpoint.part file.
func (r *scaleRun) snapshotsInProgress() bool {
	for _, dir := range r.q.dirs {
		if len(snapshotFiles(dir, ".checkpoint.part")) > 0 {
			return true
		}
	}
	return false
}

// snapshotFiles lists the files in dir ending in suffix.
func snapshotFiles(dir, suffix string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
	return paths
}

// steadySettle is how long the steady window waits after the last
// controller finished its snapshot: the collection of garbage the
// snapshot left (a JVM's or Go's) is the snapshot's cost, not the steady
// state's.
const steadySettle = 10 * time.Second

// steady measures the controllers' CPU and the active one's memory over a
// window with every broker heartbeating. It begins once no controller is
// writing a snapshot (the followers write theirs at about the time the
// leader does) and steadySettle has passed.
func (r *scaleRun) steady() {
	deadline := time.Now().Add(r.cfg.snapInterval + time.Minute)
	for r.snapshotsInProgress() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(steadySettle)
	r.logf("steady state: %v with %d brokers heartbeating", r.cfg.window, len(r.fleet.Brokers))
	r.fleet.SetPhase("steady")
	leaderID, pid := r.leaderPID()
	pids := slices.Collect(maps.Values(r.q.pids))
	before, leaderBefore := mustCPU(r.b, pids...), mustCPU(r.b, pid)
	began, steal := time.Now(), StartSteal()
	r.fleet.Heartbeats().Start()
	profile := startProfiles(r.b, r.q.pprof[leaderID], "steady-leader", r.cfg.window, true)
	time.Sleep(r.cfg.window)
	beats := r.fleet.Heartbeats().Stop()
	profile.wait()
	elapsed := time.Since(began).Seconds()
	r.f.stealOf("steady", steal)
	r.f.set("steady", "controller CPU, 3 controllers", (mustCPU(r.b, pids...)-before).Seconds()/elapsed)
	r.f.set("steady", "  of which the active controller", (mustCPU(r.b, pid)-leaderBefore).Seconds()/elapsed)
	r.f.set("steady", "active controller RSS", float64(mustRSS(r.b, pid))/(1<<20))
	var followers int64
	for id, p := range r.q.pids {
		if id != leaderID {
			followers += mustRSS(r.b, p)
		}
	}
	r.f.set("steady", "followers' RSS, together", float64(followers)/(1<<20))
	r.f.set("steady", "heartbeat p99", msOf(Percentile(beats, 0.99)))
}

// steadyWrites measures the storm's writer alone: one-partition topics
// created one at a time for a quarter of a window (at least 2 s) with no
// observer fetching, the latency the storm's writes are held to. It runs
// after the storm: before it, its records would lengthen the log tail
// every observer of the storm reads after the snapshot.
func (r *scaleRun) steadyWrites() {
	r.logf("steady writes: one writer for %v", max(r.cfg.window/4, 2*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), max(r.cfg.window/4, 2*time.Second))
	defer cancel()
	lat := r.writeUntil(ctx, "steady")
	r.f.set("steady", "one writer's CreateTopics p50", msOf(Percentile(lat, 0.5)))
	r.f.set("steady", "one writer's CreateTopics p99", msOf(Percentile(lat, 0.99)))
	r.f.notes = append(r.f.notes, fmt.Sprintf("steady: %d writes", len(lat)))
}

// storm runs cfg.stormRounds catch-up storms one after the other while
// one writer creates topics one at a time. In each, cfg.observers new
// observers fetch from offset 0 (and any snapshot the leader sends them
// to) until every one has read up to where the fleet's watcher was when
// the round began. The catch-up time is the median round's; the writes of
// all rounds make one latency distribution, since one storm lasts only
// seconds, about 40 writes.
func (r *scaleRun) storm() {
	cfg := r.cfg
	leaderID, pid := r.leaderPID()
	r.fleet.SetPhase("storm")
	defer startProfiles(r.b, r.q.pprof[leaderID], "storm-leader", 15*time.Second, true).wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writes := make(chan []time.Duration, 1)
	go func() { writes <- r.writeUntil(ctx, "storm") }()
	steal, rss := StartSteal(), startRSSPeak(pid)
	var tooks []time.Duration
	var snapshotBytes int64
	for round := range cfg.stormRounds {
		took, bytes := r.stormRound(ctx, round)
		tooks = append(tooks, took)
		snapshotBytes += bytes
	}
	above := rss.stop()
	cancel()
	lat := <-writes
	r.f.stealOf("storm", steal)
	slices.Sort(tooks)
	r.f.set("storm", "all observers caught up after (median round)", tooks[len(tooks)/2].Seconds())
	r.f.set("storm", "leader RSS above idle during the storm", float64(above)/(1<<20))
	r.f.set("storm", "concurrent CreateTopics p50", msOf(Percentile(lat, 0.5)))
	r.f.set("storm", "concurrent CreateTopics p99", msOf(Percentile(lat, 0.99)))
	r.f.set("storm", "concurrent CreateTopics max", msOf(slices.Max(append(lat, 0))))
	r.f.notes = append(r.f.notes, fmt.Sprintf("storm: %d rounds of %v, %d writes, %d MiB of snapshots fetched, leader's anonymous memory %.1f MiB above idle at its peak",
		len(tooks), tooks, len(lat), snapshotBytes>>20, float64(rss.anonAbove())/(1<<20)))
}

// stormRound starts cfg.observers new observers and waits until all have
// caught up; it returns how long that took and the snapshot bytes they
// fetched.
func (r *scaleRun) stormRound(parent context.Context, round int) (time.Duration, int64) {
	cfg := r.cfg
	target := r.fleet.Watcher().Committed()
	r.logf("catch-up storm %d: %d observers read to offset %d", round+1, cfg.observers, target)
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var wg sync.WaitGroup
	began := time.Now()
	var observers []*MetadataWatcher
	for i := range cfg.observers {
		w := NewMetadataWatcher(int32(1_000_000+round*cfg.observers+i), r.q.clusterID, r.fleet.Locator()).FetchSnapshots()
		observers = append(observers, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Run(ctx)
		}()
	}
	deadline := began.Add(10 * time.Minute)
	for slices.ContainsFunc(observers, func(w *MetadataWatcher) bool { return w.Committed() < target }) {
		if time.Now().After(deadline) {
			r.fatalf("catch-up storm: observers not caught up after 10 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(began)
	cancel()
	wg.Wait()
	var snapshotBytes int64
	for _, w := range observers {
		snapshotBytes += w.SnapshotBytes()
	}
	return took, snapshotBytes
}

// writeUntil creates one-partition topics one at a time on the active
// controller until ctx ends, and returns their latencies. A failed or
// refused create is counted as a broker error and retried on a new
// connection.
func (r *scaleRun) writeUntil(ctx context.Context, prefix string) []time.Duration {
	var out []time.Duration
	var conn *Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for i := 0; ctx.Err() == nil; i++ {
		if conn == nil {
			addr, _, err := r.fleet.Locator().Leader(ctx)
			if err == nil {
				conn, err = Dial(ctx, addr)
			}
			if err != nil {
				sleepCtx(ctx, PollInterval)
				continue
			}
		}
		began := time.Now()
		answer, err := CreateTopic1(ctx, conn, fmt.Sprintf("%s-%06d", prefix, i), 1, r.cfg.rf)
		if err != nil || answer.ErrorCode != 0 {
			if ctx.Err() == nil {
				r.fleet.countError("CreateTopics", fmt.Errorf("error code %d: %v", answer.ErrorCode, err))
			}
			conn.Close()
			conn = nil
			sleepCtx(ctx, PollInterval)
			continue
		}
		out = append(out, time.Since(began))
	}
	return out
}

// brokersFail kills brokers (no more heartbeats) and measures, from the
// first batch that fenced one or moved a leader off one, the time until no
// partition is led by them (by the batches' append timestamps), and until
// the fleet's watcher had fetched that batch.
func (r *scaleRun) brokersFail(what string, ids []int32) {
	phase := strings.ReplaceAll(what, " ", "-")
	r.fleet.SetPhase(phase)
	led, wait := r.leaders.WatchLeadAway(ids)
	r.logf("%s fails: %d brokers leading %d partitions", what, len(ids), led)
	steal := StartSteal()
	var firstExpiry time.Time // the earliest last heartbeat among them
	for _, b := range r.fleet.Brokers {
		if slices.Contains(ids, b.ID) {
			b.Kill()
			r.killed[b.ID] = true
			if last := b.LastHeartbeat(); firstExpiry.IsZero() || last.Before(firstExpiry) {
				firstExpiry = last
			}
		}
	}
	res, err := wait(2 * time.Minute)
	r.f.stealOf(phase, steal)
	if err != nil {
		// A finding, not a broken run: the phases after it still measure.
		r.b.Logf("%s: %s fails: %v", r.q.name, what, err)
		r.f.notes = append(r.f.notes, fmt.Sprintf("%s: NOT every partition led again: %v", what, err))
		return
	}
	r.f.set(phase, what+": partitions it led", float64(res.Led))
	r.f.set(phase, what+": last heartbeat to first fence", res.Fenced.Sub(firstExpiry).Seconds())
	r.f.set(phase, what+": fence to every partition led", msOf(res.LedAt.Sub(res.Fenced)))
	r.f.set(phase, what+": fence to the fleet fetched it", msOf(res.Fetched.Sub(res.Fenced)))
	if !res.LastFence.IsZero() {
		r.f.set(phase, what+": last fence to every partition led", msOf(res.LedAt.Sub(res.LastFence)))
		r.f.set(phase, what+": last fence to the fleet fetched it", msOf(res.Fetched.Sub(res.LastFence)))
	}
	if res.Offline > 0 {
		r.f.notes = append(r.f.notes, fmt.Sprintf("%s: %d partitions without a leader", what, res.Offline))
	}
}

// failover SIGKILLs the active controller and measures until a survivor
// answers a BrokerHeartbeat, and then a CreateTopics, without error.
func (r *scaleRun) failover() {
	leaderID, _ := r.leaderPID()
	r.logf("controller failover: SIGKILL of node %d", leaderID)
	r.fleet.SetPhase("failover")
	var survivors []string
	for id, addr := range r.q.voters {
		if id != leaderID {
			survivors = append(survivors, addr)
		}
	}
	broker := r.fleet.Brokers[0]
	steal, killed := StartSteal(), time.Now()
	r.q.procs[leaderID].Kill()
	deadline := killed.Add(3 * time.Minute)
	heartbeat := func(addr string) bool {
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.SetVersion(1)
		req.BrokerID, req.BrokerEpoch = broker.ID, broker.Epoch
		req.CurrentMetadataOffset = r.fleet.Watcher().Committed()
		resp, err := Request(addr, req)
		return err == nil && resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode == 0
	}
	created := func(addr string) bool {
		conn, err := Dial(context.Background(), addr)
		if err != nil {
			return false
		}
		defer conn.Close()
		answer, err := CreateTopic1(context.Background(), conn, fmt.Sprintf("failover-%d", time.Now().UnixNano()), 1, r.cfg.rf)
		return err == nil && answer.ErrorCode == 0
	}
	for i, probe := range []func(string) bool{heartbeat, created} {
		for !slices.ContainsFunc(survivors, probe) {
			if time.Now().After(deadline) {
				r.fatalf("controller failover: no survivor answered after 3 minutes")
			}
			time.Sleep(5 * time.Millisecond)
		}
		name := []string{"kill to a heartbeat answered", "kill to a CreateTopics answered"}[i]
		r.f.set("failover", name, msOf(time.Since(killed)))
	}
	r.f.stealOf("failover", steal)
}
