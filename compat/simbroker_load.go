package compat

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicLoad is the outcome of creating topics through CreateTopics.
type TopicLoad struct {
	Latencies []time.Duration // one per topic, in completion order
	Elapsed   time.Duration   // from the first request to the last answer
	Retries   int             // requests sent again after NOT_CONTROLLER or a broken connection
}

// CreateTopicsDirect creates the named topics (partitions each, replication
// factor rf) by sending CreateTopics v7, one topic per request, straight to
// the active controller, from concurrency requesters each with its own
// connection and one request in flight. The requesters connect before the
// clock starts: Elapsed is the controller's time, not the client's set-up.
// It fails on the first topic error other than a leadership change.
func CreateTopicsDirect(ctx context.Context, locator *ControllerLocator, names []string, partitions int32, rf int16, concurrency int) (*TopicLoad, error) {
	work := make(chan string)
	var (
		mu       sync.Mutex
		load     = &TopicLoad{}
		firstErr error
		wg       sync.WaitGroup
		dialed   sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range concurrency {
		wg.Add(1)
		dialed.Add(1)
		go func() {
			defer wg.Done()
			var conn *Conn
			var connAddr string
			defer func() {
				if conn != nil {
					conn.Close()
				}
			}()
			// Connect up front; should it fail, the loop below retries.
			if addr, _, err := locator.Leader(ctx); err == nil {
				if c, err := Dial(ctx, addr); err == nil {
					conn, connAddr = c, addr
				}
			}
			dialed.Done()
			for name := range work {
				for attempt := 0; ; attempt++ {
					if conn == nil {
						addr, _, err := locator.Leader(ctx)
						if err == nil {
							conn, err = Dial(ctx, addr)
						}
						if err != nil {
							if ctx.Err() != nil {
								return
							}
							locator.Invalidate(addr)
							time.Sleep(PollInterval)
							continue
						}
						connAddr = addr
					}
					began := time.Now()
					answer, err := CreateTopic1(ctx, conn, name, partitions, rf)
					code, msg := answer.ErrorCode, ""
					if answer.ErrorMessage != nil {
						msg = *answer.ErrorMessage
					}
					took := time.Since(began)
					retry := err != nil || code == kerr.NotController.Code
					// A retried request may find the topic made by the try
					// whose answer was lost.
					if attempt > 0 && code == kerr.TopicAlreadyExists.Code {
						code = 0
					}
					mu.Lock()
					switch {
					case retry:
						load.Retries++
					case code != 0 && firstErr == nil:
						firstErr = errorf("CreateTopics %s: %v: %s", name, kerr.ErrorForCode(code), msg)
						cancel()
					case code == 0:
						load.Latencies = append(load.Latencies, took)
					}
					mu.Unlock()
					if !retry {
						break
					}
					conn.Close()
					conn = nil
					locator.Invalidate(connAddr)
					if ctx.Err() != nil {
						return
					}
				}
			}
		}()
	}
	dialed.Wait()
	start := time.Now()
feed:
	for _, n := range names {
		select {
		case work <- n:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	load.Elapsed = time.Since(start)
	if firstErr == nil && len(load.Latencies) < len(names) {
		firstErr = errorf("created %d of %d topics", len(load.Latencies), len(names))
	}
	return load, firstErr
}

// CreateTopic1 sends CreateTopics v7 for one topic on conn and returns that
// topic's answer (its error code, and its id when created).
func CreateTopic1(ctx context.Context, conn *Conn, name string, partitions int32, rf int16) (kmsg.CreateTopicsResponseTopic, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, t)
	rctx, cancel := context.WithTimeout(ctx, 35*time.Second)
	defer cancel()
	r, err := conn.Request(rctx, req)
	if err != nil {
		return kmsg.CreateTopicsResponseTopic{}, err
	}
	resp := r.(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		return kmsg.CreateTopicsResponseTopic{}, errorf("CreateTopics answered %d topics for 1", len(resp.Topics))
	}
	return resp.Topics[0], nil
}

// userHZ is the unit of utime and stime in /proc/<pid>/stat. Linux fixes it
// at 100 for user space on every architecture Go supports here.
const userHZ = 100

// ProcessCPU returns the CPU time (user plus system) a process has used,
// from /proc/<pid>/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after its closing parenthesis start with field 3.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, errorf("/proc/%d/stat: %d fields after the name", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(fields[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, errorf("/proc/%d/stat: utime %q stime %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// TotalCPU sums ProcessCPU over pids.
func TotalCPU(pids ...int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		d, err := ProcessCPU(pid)
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}

// LoadAverage is the first three fields of /proc/loadavg ("" if unreadable).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// ProbeRoundTrips sends ApiVersions to addr every interval on one
// connection until ctx ends, and returns the round-trip times. ApiVersions
// touches no controller state, so its latency is the floor a heartbeat's
// cannot beat on this machine at this moment: loopback, scheduling, the
// server's request path.
func ProbeRoundTrips(ctx context.Context, addr string, interval time.Duration) []time.Duration {
	var out []time.Duration
	conn, err := Dial(ctx, addr)
	if err != nil {
		return nil
	}
	defer conn.Close()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		start := time.Now()
		if _, err := conn.Request(ctx, simApiVersionsRequest()); err != nil {
			return out
		}
		out = append(out, time.Since(start))
	}
}

// CPUTicks reads the machine's CPU time from /proc/stat: the ticks the
// hypervisor stole from this VM's CPUs (steal) and all ticks. A benchmark
// phase whose steal share is high ran on a host that was busy elsewhere.
func CPUTicks() (steal, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0
	}
	for i, f := range fields[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		if i < 8 { // user nice system idle iowait irq softirq steal; guest time is in user
			total += n
		}
		if i == 7 {
			steal = n
		}
	}
	return steal, total
}

// StealMeter measures the share of CPU time stolen between Start and Stop.
type StealMeter struct{ steal, total int64 }

// StartSteal starts a StealMeter.
func StartSteal() StealMeter {
	s, t := CPUTicks()
	return StealMeter{s, t}
}

// Percent is the stolen share of CPU time since StartSteal, in percent.
func (m StealMeter) Percent() float64 {
	s, t := CPUTicks()
	if t <= m.total {
		return 0
	}
	return 100 * float64(s-m.steal) / float64(t-m.total)
}
