package embed

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/protocol"
)

// Environment of the heartbeat fleet benchmark's client process.
const (
	hbClientEnv   = "KRAFTD_HB_CLIENT"   // the server's address; set only in the client process
	hbBrokersEnv  = "KRAFTD_HB_BROKERS"  // id:epoch,... of the registered brokers
	hbIntervalEnv = "KRAFTD_HB_INTERVAL" // time between one broker's heartbeats
	hbWindowEnv   = "KRAFTD_HB_WINDOW"   // how long the measured window lasts
)

// BenchmarkBrokerHeartbeatFleet measures what a fleet of heartbeating
// brokers costs the active controller: the steady state of the scale
// benchmark (1,000 brokers, one heartbeat every 2 s each) without Apache.
// One in-process kraftd node (real disk) registers the brokers; a child
// process (this test binary again, TestHeartbeatFleetClient) opens one
// loopback connection per broker and heartbeats on each at the interval,
// so that this process's getrusage counts the server's CPU alone. Once
// every broker is unfenced, it reports for a window: server CPU per
// heartbeat and cores busy (the idle node's own cost is reported apart),
// heap allocations per heartbeat, and the heartbeat latency the brokers
// saw.
//
// KRAFTD_HB_FLEET (brokers, default 1000), KRAFTD_HB_INTERVAL (2s) and
// KRAFTD_HB_WINDOW (20s) change the load, KRAFTD_HB_IDLE (3s) how long the
// idle node is measured; KRAFTD_HB_CPUPROFILE names a file for a CPU
// profile of the window alone, and of the idle node in that name plus
// ".idle" (run without -cpuprofile).
// The work is done once whatever
// b.N is; run it with -benchtime 1x.
func BenchmarkBrokerHeartbeatFleet(b *testing.B) {
	brokers := envInt("KRAFTD_HB_FLEET", 1000)
	interval := envDuration(hbIntervalEnv, 2*time.Second)
	window := envDuration(hbWindowEnv, 20*time.Second)

	nodes := startBenchQuorum(b, 1)
	leader := waitBenchLeader(b, nodes, 30*time.Second)
	epochs := registerBrokersInParallel(b, leader.Controller(), leader.ClusterID(), brokers, 32)
	var list []string
	for id, epoch := range epochs {
		list = append(list, fmt.Sprintf("%d:%d", id, epoch))
	}

	// What the node costs with no broker talking to it.
	profileName := os.Getenv("KRAFTD_HB_CPUPROFILE")
	if profileName != "" {
		f, err := os.Create(profileName + ".idle")
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
	}
	idleStart, idleCPU := time.Now(), processCPU(b)
	time.Sleep(envDuration("KRAFTD_HB_IDLE", 3*time.Second))
	idleCores := (processCPU(b) - idleCPU).Seconds() / time.Since(idleStart).Seconds()
	if profileName != "" {
		pprof.StopCPUProfile()
	}

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(),
		hbClientEnv+"="+nodes[0].srv.Addr("CONTROLLER").String(),
		hbBrokersEnv+"="+strings.Join(list, ","),
		hbIntervalEnv+"="+interval.String(),
		hbWindowEnv+"="+window.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	var profile *os.File
	if profileName != "" {
		if profile, err = os.Create(profileName); err != nil {
			b.Fatal(err)
		}
	}
	lines := bufio.NewScanner(out)
	var (
		start            time.Time
		cpu0             time.Duration
		mem0, mem1       runtime.MemStats
		beats            int
		p50, p99, worst  float64
		elapsed, cpuUsed time.Duration
	)
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		switch {
		case len(f) == 1 && f[0] == "go":
			if profile != nil {
				if err := pprof.StartCPUProfile(profile); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&mem0)
			start, cpu0 = time.Now(), processCPU(b)
		case len(f) == 2 && f[0] == "stop":
			elapsed, cpuUsed = time.Since(start), processCPU(b)-cpu0
			runtime.ReadMemStats(&mem1)
			if profile != nil {
				pprof.StopCPUProfile()
				profile.Close()
			}
			beats, _ = strconv.Atoi(f[1])
		case len(f) == 4 && f[0] == "done":
			p50, _ = strconv.ParseFloat(f[1], 64)
			p99, _ = strconv.ParseFloat(f[2], 64)
			worst, _ = strconv.ParseFloat(f[3], 64)
		case len(f) > 0 && f[0] == "fail":
			b.Fatal(lines.Text())
		}
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("heartbeat client: %v", err)
	}
	if beats == 0 {
		b.Fatal("heartbeat client measured nothing")
	}
	perBeat := cpuUsed / time.Duration(beats)
	cores := cpuUsed.Seconds() / elapsed.Seconds()
	allocs := float64(mem1.Mallocs-mem0.Mallocs) / float64(beats)
	bytes := float64(mem1.TotalAlloc-mem0.TotalAlloc) / float64(beats)
	b.ReportMetric(float64(perBeat.Nanoseconds()), "cpu-ns/hb")
	b.ReportMetric(cores, "cores")
	b.ReportMetric(idleCores, "idle-cores")
	b.ReportMetric(allocs, "allocs/hb")
	b.ReportMetric(bytes, "B/hb")
	b.ReportMetric(p99, "hb-p99-ms")
	fmt.Printf("\nBenchmarkBrokerHeartbeatFleet: 1 kraftd node in process, %d brokers heartbeating every %s over loopback, %s window (load %s):\n"+
		"  %d heartbeats, server CPU %s per heartbeat, %.3f cores (idle node %.3f), %.1f allocs and %.0f B per heartbeat, latency p50 %.2f ms p99 %.2f ms max %.2f ms\n",
		brokers, interval, elapsed.Round(time.Millisecond), loadAverage(), beats, perBeat, cores, idleCores, allocs, bytes, p50, p99, worst)
}

// registerBrokersInParallel registers count brokers (ids 1..count),
// parallel at a time, and returns their epochs. They stay fenced until
// they heartbeat.
func registerBrokersInParallel(tb testing.TB, ctl *controller.Controller, clusterID string, count, parallel int) map[int32]int64 {
	tb.Helper()
	var (
		mu     sync.Mutex
		epochs = map[int32]int64{}
		next   atomic.Int32
		wg     sync.WaitGroup
		failed atomic.Value
	)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id := next.Add(1)
				if id > int32(count) {
					return
				}
				req := kmsg.NewPtrBrokerRegistrationRequest()
				req.SetVersion(4)
				req.BrokerID, req.ClusterID = id, clusterID
				req.IncarnationID = [16]byte{0: byte(id), 1: byte(id >> 8), 15: 0xbe}
				req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(20000 + id)}}
				for _, f := range controller.SupportedFeatures {
					req.Features = append(req.Features, kmsg.BrokerRegistrationRequestFeature{Name: f.Name, MinSupportedVersion: f.Min, MaxSupportedVersion: f.Max})
				}
				req.LogDirs = [][16]byte{{0: 0xd1, 1: byte(id), 2: byte(id >> 8)}}
				req.PreviousBrokerEpoch = -1
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				epoch, err := ctl.RegisterBroker(ctx, req)
				cancel()
				if err != nil {
					failed.Store(fmt.Errorf("register broker %d: %w", id, err))
					return
				}
				mu.Lock()
				epochs[id] = epoch
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	return epochs
}

// heartbeatFleetClient is BenchmarkBrokerHeartbeatFleet's client process
// (TestMain runs it in the test binary the benchmark starts again). Each
// broker has its own connection and heartbeats on it at the interval,
// starting at a random point of the first one, as a real fleet does. It
// prints "go" once every broker has been answered unfenced (the warm-up
// writes the unfencing records); at the end of the window, "stop" with the
// number of heartbeats answered within it; and once every broker has
// stopped, "done" with their latency (p50, p99, max in ms).
func heartbeatFleetClient(addr string) {
	interval := envDuration(hbIntervalEnv, 2*time.Second)
	window := envDuration(hbWindowEnv, 20*time.Second)
	type broker struct {
		id    int32
		epoch int64
	}
	var fleet []broker
	for _, s := range strings.Split(os.Getenv(hbBrokersEnv), ",") {
		id, epoch, _ := strings.Cut(s, ":")
		i, _ := strconv.Atoi(id)
		e, _ := strconv.ParseInt(epoch, 10, 64)
		fleet = append(fleet, broker{int32(i), e})
	}

	const (
		warming = iota
		measuring
		stopped
	)
	var (
		phase    atomic.Int32
		unfenced atomic.Int32
		counted  atomic.Int64
		mu       sync.Mutex
		lat      []time.Duration
		wg       sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		fmt.Printf("fail "+format+"\n", args...)
		os.Exit(1)
	}
	for _, br := range fleet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				fail("dial: %v", err)
			}
			defer c.Close()
			r := bufio.NewReader(c)
			req := kmsg.NewPtrBrokerHeartbeatRequest()
			req.SetVersion(1)
			req.BrokerID, req.BrokerEpoch = br.id, br.epoch
			req.CurrentMetadataOffset = 1 << 62 // caught up with anything
			clientID := fmt.Sprintf("broker-%d-heartbeat", br.id)
			next := time.Now().Add(rand.N(interval))
			wasFenced := true
			var mine []time.Duration
			for corr := int32(1); ; corr++ {
				time.Sleep(time.Until(next))
				next = next.Add(interval)
				p := phase.Load()
				if p == stopped {
					break
				}
				frame := protocol.AppendFrame(nil, req.AppendTo(protocol.AppendRequestHeader(nil, req, corr, clientID)))
				sent := time.Now()
				if _, err := c.Write(frame); err != nil {
					fail("broker %d: write: %v", br.id, err)
				}
				in, err := protocol.ReadFrame(r, 1<<20)
				if err != nil {
					fail("broker %d: read: %v", br.id, err)
				}
				took := time.Since(sent)
				_, resp, err := protocol.ParseResponse(in, req)
				if err != nil {
					fail("broker %d: %v", br.id, err)
				}
				hb := resp.(*kmsg.BrokerHeartbeatResponse)
				if hb.ErrorCode != 0 && p == measuring {
					fail("broker %d: error %d", br.id, hb.ErrorCode)
				}
				if wasFenced && hb.ErrorCode == 0 && !hb.IsFenced {
					wasFenced = false
					unfenced.Add(1)
				}
				if p == measuring && phase.Load() == measuring {
					counted.Add(1)
					mine = append(mine, took)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for unfenced.Load() < int32(len(fleet)) {
		if time.Now().After(deadline) {
			fail("only %d of %d brokers unfenced", unfenced.Load(), len(fleet))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(interval) // one more round, so no unfencing write is left in the window
	phase.Store(measuring)
	fmt.Println("go")
	time.Sleep(window)
	phase.Store(stopped)
	n := counted.Load()
	fmt.Printf("stop %d\n", n)
	wg.Wait()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Printf("done %.3f %.3f %.3f\n", ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99)), ms(lat[len(lat)-1]))
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
