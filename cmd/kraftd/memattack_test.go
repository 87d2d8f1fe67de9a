package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
)

// A running kraftd process, stopped when the test ends.
type process struct {
	cmd  *exec.Cmd
	addr string
	out  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startVoter formats and starts a one-voter static quorum with extra keys;
// it is killed when the test ends, whatever the outcome.
func startVoter(t *testing.T, bin, extra string) *process {
	t.Helper()
	conf, _ := staticVoter(t, bin, extra)
	body, _ := os.ReadFile(conf)
	var addr string
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "listeners=CONTROLLER://"); ok {
			addr = v
		}
	}
	p := &process{addr: addr, out: &lockedBuffer{}}
	p.cmd = exec.Command(bin, "start", "--config", conf)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			out := p.out.String()
			t.Logf("kraftd output (last 4 KiB):\n%s", out[max(0, len(out)-4096):])
		}
	})
	return p
}

// procStatus reads a field of /proc/PID/status in bytes (VmRSS, VmHWM).
func (p *process) procStatus(t *testing.T, field string) int64 {
	t.Helper()
	body, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("kraftd is gone: %v", err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/PID/status", field)
	return 0
}

// kafkaConn is a raw client connection.
type kafkaConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialKafka(addr string) (*kafkaConn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &kafkaConn{c: c, r: bufio.NewReader(c)}, nil
}

func requestFrame(req kmsg.Request, corr int32) []byte {
	return protocol.AppendFrame(nil, req.AppendTo(protocol.AppendRequestHeader(nil, req, corr, "attack-test")))
}

// roundTrip sends req and reads its answer within timeout.
func (k *kafkaConn) roundTrip(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	k.c.SetDeadline(time.Now().Add(timeout))
	if _, err := k.c.Write(requestFrame(req, 7)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(k.r, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(k.r, frame); err != nil {
		return nil, err
	}
	_, resp, err := protocol.ParseResponse(frame, req)
	return resp, err
}

// describeQuorum asks addr, on a new connection, for the quorum's leader
// and epoch.
func describeQuorum(addr string, timeout time.Duration) (leader, epoch int32, err error) {
	k, err := dialKafka(addr)
	if err != nil {
		return -1, -1, err
	}
	defer k.c.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(1)
	req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	resp, err := k.roundTrip(req, timeout)
	if err != nil {
		return -1, -1, err
	}
	r := resp.(*kmsg.DescribeQuorumResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return -1, -1, fmt.Errorf("DescribeQuorum answered %+v", r)
	}
	part := r.Topics[0].Partitions[0]
	return part.LeaderID, part.LeaderEpoch, nil
}

// fillLog commits about n bytes of ConfigRecords (client metrics
// subscriptions with long metric lists), so that a Fetch from offset 0 is
// answered with megabytes of records.
func fillLog(t *testing.T, addr string, n int) {
	t.Helper()
	k, err := dialKafka(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer k.c.Close()
	const per = 30 << 10
	value := strings.TrimSuffix(strings.Repeat("org.apache.kafka.x,", per/19), ",")
	for i := 0; i*per < n; i++ {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(1)
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, fmt.Sprintf("fill-%d", i)
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "metrics", &value
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		// The controller may still be activating (NOT_CONTROLLER): retry.
		for attempt := 0; ; attempt++ {
			resp, err := k.roundTrip(req, 2*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			r := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
			if r.ErrorCode == 0 {
				break
			}
			if attempt == 1200 { // two minutes
				t.Fatalf("filling the log: IncrementalAlterConfigs answered %+v", r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// attack is a mix of hostile connections, none of which reads an answer.
type attack struct {
	fetchers int // pipeline Fetch from offset 0
	stallers int // announce a 100 MiB CreateTopics frame, send 1 KiB, stall
	bulk     int // send one whole CreateTopics frame of bulkSize bytes
	bulkSize int
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// hugeCreateTopics is a CreateTopics v7 frame of about size bytes of
// near-empty topics, the request that decodes to the most per byte. It is
// written out by hand, being too large to build quickly through kmsg.
func hugeCreateTopics(size int) []byte {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	// Each topic: compact name "t", partitions 1, replication factor 1,
	// two empty compact arrays and empty tags: 11 bytes.
	topic := []byte{2, 't', 0, 0, 0, 1, 0, 1, 1, 1, 0}
	n := size / len(topic)
	body := protocol.AppendRequestHeader(nil, req, 1, "attack-test")
	body = binary.AppendUvarint(body, uint64(n+1))
	body = append(body, bytes.Repeat(topic, n)...)
	body = binary.BigEndian.AppendUint32(body, 1000) // timeout
	body = append(body, 0, 0)                        // validate only, tags
	return protocol.AppendFrame(nil, body)
}

// launch opens the attack's connections and sends what each sends; it
// returns them, for the caller to close, and a channel closed once every
// write has ended.
func (a attack) launch(t *testing.T, addr string, epoch int32) ([]net.Conn, <-chan struct{}) {
	t.Helper()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID, fetch.MaxBytes, fetch.MaxWaitMillis = -1, 8<<20, 0
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.FetchRequestTopicPartition{{
		Partition: 0, CurrentLeaderEpoch: epoch, FetchOffset: 0, PartitionMaxBytes: 8 << 20}}}}
	var pipelined []byte
	for corr := int32(1); corr <= 200; corr++ {
		pipelined = append(pipelined, requestFrame(fetch, corr)...)
	}
	var bulk []byte
	if a.bulk > 0 {
		bulk = hugeCreateTopics(a.bulkSize)
	}
	// A CreateTopics header announcing a 100 MiB frame, and 1 KiB of it.
	small := hugeCreateTopics(2048)
	stall := binary.BigEndian.AppendUint32(nil, 100<<20)
	stall = append(stall, small[4:1028]...)
	var conns []net.Conn
	var wg sync.WaitGroup
	send := func(payload []byte) {
		c, err := net.DialTimeout("tcp", addr, 30*time.Second)
		if err != nil {
			t.Errorf("dial: %v", err)
			return
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Blocks once kraftd stops reading; the deadline ends it.
			c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			c.Write(payload)
		}()
	}
	for range a.fetchers {
		send(pipelined)
	}
	for range a.stallers {
		send(stall)
	}
	for range a.bulk {
		send(bulk)
	}
	written := make(chan struct{})
	go func() {
		wg.Wait()
		close(written)
	}()
	return conns, written
}

// Hostile connections of every kind (pipelining Fetch without reading the
// answers, huge CreateTopics frames, large frames announced and then
// stalled) add no more than 256 MiB to a real kraftd's resident memory,
// and it keeps answering DescribeQuorum meanwhile. The mix and the bound
// are taken from KRAFTD_ATTACK_{FETCH,STALL,BULK,BULK_BYTES,WATCH_S}, to
// measure.
func TestHostileConnectionsShareOneMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kraftd and attacks it")
	}
	bin := kraftdBinary(t)
	p := startVoter(t, bin, "")
	deadline := time.Now().Add(2 * time.Minute)
	var epoch int32
	for {
		leader, e, err := describeQuorum(p.addr, 10*time.Second)
		if err == nil && leader == 1 {
			epoch = e
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("kraftd elected no leader within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	fillLog(t, p.addr, 8<<20)
	a := attack{fetchers: envInt("KRAFTD_ATTACK_FETCH", 190), stallers: envInt("KRAFTD_ATTACK_STALL", 6), bulk: envInt("KRAFTD_ATTACK_BULK", 4),
		bulkSize: envInt("KRAFTD_ATTACK_BULK_BYTES", 100<<20-1024)} // under socket.request.max.bytes
	watch := time.Duration(envInt("KRAFTD_ATTACK_WATCH_S", 8)) * time.Second

	base := p.procStatus(t, "VmRSS")
	started := time.Now()
	conns, written := a.launch(t, p.addr, epoch)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		<-written
	}()
	// Sample beside the requests, which may be slow to be answered, and
	// keep a broken node from taking the machine.
	const killAt = 3 << 30
	done := make(chan struct{})
	sampled := make(chan int64, 1)
	go func() {
		high := int64(0)
		defer func() { sampled <- high }()
		for {
			body, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
			if err != nil {
				return
			}
			for _, line := range strings.Split(string(body), "\n") {
				if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					high = max(high, kb<<10)
				}
			}
			if high > killAt {
				p.cmd.Process.Kill()
				return
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	// The node must keep answering while under attack; the bound is
	// generous, for a loaded machine. The watch lasts until every
	// attacker's write has ended, at least.
	answers := 0
	for time.Since(started) < watch || answers == 0 || !closed(written) {
		if _, _, err := describeQuorum(p.addr, 2*time.Minute); err != nil {
			close(done)
			t.Fatalf("DescribeQuorum under attack (RSS up to %d MiB): %v", (<-sampled)>>20, err)
		}
		answers++
		time.Sleep(200 * time.Millisecond)
	}
	close(done)
	high := <-sampled
	if high > killAt {
		t.Fatalf("kraftd's RSS passed %d MiB (%d MiB before the attack); killed", high>>20, base>>20)
	}
	// VmHWM also holds the peak of filling the log, before the attack:
	// the bound errs on the safe side.
	peak := p.procStatus(t, "VmHWM")
	grew := peak - base
	t.Logf("%d fetchers, %d stallers, %d bulk frames of %d bytes: VmRSS %d MiB before, VmHWM %d MiB (+%d MiB), highest VmRSS sampled %d MiB, now %d MiB; %d DescribeQuorum answers in %v",
		a.fetchers, a.stallers, a.bulk, a.bulkSize, base>>20, peak>>20, grew>>20, high>>20, p.procStatus(t, "VmRSS")>>20, answers, time.Since(started).Round(time.Millisecond))
	if grew > 256<<20 {
		t.Fatalf("hostile connections added %d MiB to kraftd's RSS, more than 256 MiB", grew>>20)
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// The hand-written CreateTopics frame is what kmsg encodes.
func TestHugeCreateTopicsIsValid(t *testing.T) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 1000
	for range 3 {
		req.Topics = append(req.Topics, kmsg.CreateTopicsRequestTopic{Topic: "t", NumPartitions: 1, ReplicationFactor: 1})
	}
	if got, want := hugeCreateTopics(33), requestFrame(req, 1); !bytes.Equal(got, want) {
		t.Fatalf("hand-written % x\nkmsg         % x", got, want)
	}
}
