package embed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/server"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/uuid"
)

// benchQuorumNode is one kraftd controller of an in-process quorum: the same
// Disk, Node and Server that `kraftd start` wires together, minus the process.
type benchQuorumNode struct {
	cfg    *server.Config
	node   *Node
	srv    *server.Server
	runErr chan error
}

// startBenchQuorum formats size metadata directories under tb's temporary
// directory (on the real disk, storage.OSFS, real fsync), starts a static
// quorum of size kraftd controllers talking over loopback TCP, and stops
// them when tb ends.
func startBenchQuorum(tb testing.TB, size int) []*benchQuorumNode {
	tb.Helper()
	return startBenchQuorumWith(tb, size, nil)
}

// startBenchQuorumWith is startBenchQuorum with extra configuration keys.
func startBenchQuorumWith(tb testing.TB, size int, extra map[string]string) []*benchQuorumNode {
	tb.Helper()
	ports := reserveLoopbackPorts(tb, size)
	var voters []string
	for i, port := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, port))
	}
	clusterID := uuid.MustRandom().String()
	root := tb.TempDir()
	var nodes []*benchQuorumNode
	// Registered before any node starts, so it runs after every start-up
	// cleanup below and before the temporary directory goes away.
	tb.Cleanup(func() { stopBenchQuorum(tb, nodes) })
	for i, port := range ports {
		id := int32(i + 1)
		props := map[string]string{
			"process.roles":             "controller",
			"node.id":                   fmt.Sprint(id),
			"controller.listener.names": "CONTROLLER",
			"listeners":                 fmt.Sprintf("CONTROLLER://127.0.0.1:%d", port),
			"controller.quorum.voters":  strings.Join(voters, ","),
			"metadata.log.dir":          filepath.Join(root, fmt.Sprintf("node-%d", id), "metadata"),
		}
		maps.Copy(props, extra)
		cfg, err := server.ParseConfig(props)
		if err != nil {
			tb.Fatal(err)
		}
		formatBenchDir(tb, cfg, clusterID)
		log := zerolog.Nop()
		disk, err := OpenDisk(storage.OSFS{}, cfg, log)
		if err != nil {
			tb.Fatal(err)
		}
		node, err := NewNode(cfg, disk, log)
		if err != nil {
			disk.Close()
			tb.Fatal(err)
		}
		srv := server.New(cfg, node, log)
		if err := srv.Listen(); err != nil {
			disk.Close()
			tb.Fatal(err)
		}
		n := &benchQuorumNode{cfg: cfg, node: node, srv: srv, runErr: make(chan error, 1)}
		go func() { n.runErr <- node.Run() }()
		nodes = append(nodes, n)
	}
	return nodes
}

// reserveLoopbackPorts finds count free ports. A static voter set names
// every port before any node listens, so the ports are picked by binding
// port 0 and releasing it; another process could take one in between, which
// is rare enough for a benchmark.
func reserveLoopbackPorts(tb testing.TB, count int) []int {
	tb.Helper()
	var ports []int
	for range count {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// formatBenchDir writes what `kraftd format` writes for a static quorum:
// bootstrap.checkpoint with the default feature levels of the latest
// metadata.version, and meta.properties.
func formatBenchDir(tb testing.TB, cfg *server.Config, clusterID string) {
	tb.Helper()
	fsys := storage.OSFS{}
	dir := cfg.MetadataLogDir
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	mv := controller.LatestMetadataVersion
	levels := controller.DefaultFeatureLevels(mv)
	bootstrap := []metadata.Record{&metadata.FeatureLevelRecord{Name: controller.MetadataVersionFeature, FeatureLevel: mv}}
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		if levels[name] > 0 {
			bootstrap = append(bootstrap, &metadata.FeatureLevelRecord{Name: name, FeatureLevel: levels[name]})
		}
	}
	now := time.Now()
	file := metadata.EncodeSnapshotFile(metadata.SnapshotFile{Records: bootstrap}, now.UnixMilli())
	if err := storage.WriteFileAtomic(fsys, filepath.Join(dir, "bootstrap.checkpoint"), file); err != nil {
		tb.Fatal(err)
	}
	meta := storage.MetaProperties{Version: 1, ClusterID: clusterID, NodeID: cfg.NodeID, DirectoryID: uuid.MustRandom()}
	if err := storage.WriteMetaProperties(fsys, filepath.Join(dir, "meta.properties"), meta, now); err != nil {
		tb.Fatal(err)
	}
}

// stopBenchQuorum stops every node (the leader resigns through
// EndQuorumEpoch as on SIGTERM), then closes the servers.
func stopBenchQuorum(tb testing.TB, nodes []*benchQuorumNode) {
	for _, n := range nodes {
		if err := n.node.Stop(); err != nil && !errors.Is(err, ErrStopped) {
			tb.Errorf("node %d stopped with %v", n.cfg.NodeID, err)
		}
		<-n.runErr
	}
	for _, n := range nodes {
		n.srv.Close()
	}
}

// waitBenchLeader waits until one node leads and has committed the start of
// its epoch, by which time it has also queued its activation records, so
// that every later proposal lands after them.
func waitBenchLeader(tb testing.TB, nodes []*benchQuorumNode, timeout time.Duration) *Node {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			st := n.node.Status()
			if st.Role == quorum.RoleLeader && st.HighWatermark > 0 {
				// One committed proposal proves the activation records
				// (queued before it) are through as well.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := n.node.Propose(ctx, []metadata.Record{&metadata.NoOpRecord{}})
				cancel()
				if err == nil {
					return n.node
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, n := range nodes {
		tb.Logf("node %d: %+v", n.cfg.NodeID, n.node.Status())
	}
	tb.Fatalf("no leader within %v", timeout)
	return nil
}

// paddedConfigRecord is a real metadata record, which followers decode and
// replay, whose encoded value is exactly size bytes: a cluster-wide broker
// config whose value is padding. Every copy sets the same key, so the image
// does not grow while the benchmark runs.
func paddedConfigRecord(tb testing.TB, size int) metadata.Record {
	tb.Helper()
	value := ""
	rec := &metadata.ConfigRecord{ResourceType: 4 /* BROKER */, ResourceName: "", Name: "kraftd.bench.padding", Value: &value}
	for range 4 {
		got := len(metadata.EncodeValue(rec))
		if got == size {
			return rec
		}
		if n := len(value) + size - got; n >= 0 {
			value = strings.Repeat("x", n)
		} else {
			tb.Fatalf("a ConfigRecord is already %d bytes, more than %d", got, size)
		}
	}
	tb.Fatalf("cannot pad a ConfigRecord to %d bytes", size)
	return nil
}

// proposalRun is what one load phase measured.
type proposalRun struct {
	latencies []time.Duration // one per proposal, commit included
	records   int
	elapsed   time.Duration
	// cpu is the whole process's CPU time (all three nodes and the
	// proposers) during the run: on a shared machine it tells a slow
	// run that was starved of CPU from one that did too much work.
	cpu time.Duration
}

// proposeUnderLoad has proposers goroutines propose batch copies of rec
// back to back on leader for duration, each waiting for its commit before
// the next.
func proposeUnderLoad(tb testing.TB, leader *Node, rec metadata.Record, proposers, batch int, duration time.Duration) proposalRun {
	tb.Helper()
	records := make([]metadata.Record, batch)
	for i := range records {
		records[i] = rec // read-only: encoding does not change a record
	}
	var (
		mu       sync.Mutex
		run      proposalRun
		firstErr error
		wg       sync.WaitGroup
	)
	cpuBefore := processCPU(tb)
	start := time.Now()
	deadline := start.Add(duration)
	for range proposers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			var err error
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				t0 := time.Now()
				_, err = leader.Propose(ctx, records)
				mine = append(mine, time.Since(t0))
				cancel()
				if err != nil {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			run.latencies = append(run.latencies, mine...)
			run.records += len(mine) * batch
		}()
	}
	wg.Wait()
	run.elapsed = time.Since(start)
	run.cpu = processCPU(tb) - cpuBefore
	if firstErr != nil {
		tb.Fatalf("proposal failed: %v", firstErr)
	}
	slices.Sort(run.latencies)
	return run
}

func (r proposalRun) recordsPerSecond() float64 { return float64(r.records) / r.elapsed.Seconds() }

// cpuPerRecord is the process CPU time spent per committed record.
func (r proposalRun) cpuPerRecord() time.Duration {
	return r.cpu / time.Duration(max(1, r.records))
}

// coresBusy is how many cores the process kept busy on average.
func (r proposalRun) coresBusy() float64 { return r.cpu.Seconds() / r.elapsed.Seconds() }

// loadAverage is the first three fields of /proc/loadavg, or "n/a".
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	fields := strings.Fields(string(raw))
	if len(fields) < 3 {
		return "n/a"
	}
	return strings.Join(fields[:3], " ")
}

// percentile of sorted samples, by nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// measureFsync times what the log pays per commit on dir's filesystem:
// append 100 bytes to a file, then fsync it (os.File.Sync, as the log's
// segments do).
func measureFsync(tb testing.TB, dir string, samples int, budget time.Duration) []time.Duration {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "fsync-floor"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	payload := make([]byte, 100)
	var out []time.Duration
	deadline := time.Now().Add(budget)
	for len(out) < samples && time.Now().Before(deadline) {
		t0 := time.Now()
		if _, err := f.Write(payload); err != nil {
			tb.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			tb.Fatal(err)
		}
		out = append(out, time.Since(t0))
	}
	slices.Sort(out)
	return out
}

// measureLoopbackRTT times a small ping-pong over 127.0.0.1 TCP.
func measureLoopbackRTT(tb testing.TB, samples int, budget time.Duration) []time.Duration {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	const size = 16
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, size)
	var out []time.Duration
	deadline := time.Now().Add(budget)
	for len(out) < samples && time.Now().Before(deadline) {
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			tb.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			tb.Fatal(err)
		}
		out = append(out, time.Since(t0))
	}
	slices.Sort(out)
	return out
}
