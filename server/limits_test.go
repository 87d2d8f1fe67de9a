package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/internal/wiretest"
	"github.com/kraftd/kraftd/protocol"
)

// logBuffer collects a server's JSON log lines for a test to search.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServerWith is startServer with extra properties, logging to logs.
func startServerWith(t *testing.T, extra map[string]string, logs io.Writer) (*Server, string, *stillBackend) {
	t.Helper()
	props := map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://127.0.0.1:0", "log.dirs": t.TempDir(), "socket.request.max.bytes": "1048576",
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	if logs == nil {
		logs = zerolog.NewTestWriter(t)
	}
	b := &stillBackend{wiretest.NewBackend()}
	s := New(cfg, b, zerolog.New(logs))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, s.Addr("CONTROLLER").String(), b
}

// closedByServer waits for the server to close c, unlike Conn.Closed,
// which also takes the client's own read deadline passing for a close.
func closedByServer(c *wiretest.Conn, within time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(within))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// flakyListener fails its first Accept the way a process out of file
// descriptors does, then accepts from the real listener beneath.
type flakyListener struct {
	net.Listener
	once sync.Once
}

func (l *flakyListener) Accept() (net.Conn, error) {
	var fail bool
	l.once.Do(func() { fail = true })
	if fail {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

func TestAcceptLoopSurvivesTooManyOpenFiles(t *testing.T) {
	s, _, _ := startServerWith(t, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.serve(&flakyListener{Listener: ln}, "FLAKY")
	if c := wiretest.Dial(t, ln.Addr().String()); !c.Answered(1) {
		t.Fatal("no answer after the listener's accept failed once")
	}
}

func TestMaxConnectionsRefusesTheExtraConnection(t *testing.T) {
	for _, key := range []string{"max.connections", "max.connections.per.ip"} {
		t.Run(key, func(t *testing.T) {
			_, addr, _ := startServerWith(t, map[string]string{key: "2"}, nil)
			first, second := wiretest.Dial(t, addr), wiretest.Dial(t, addr)
			if !first.Answered(1) || !second.Answered(2) {
				t.Fatal("the connections within the limit are not served")
			}
			if !closedByServer(wiretest.Dial(t, addr), 10*time.Second) {
				t.Fatal("a third connection was left open")
			}
			if !second.Answered(3) {
				t.Fatal("refusing the third connection harmed the second")
			}
			// Once one leaves (the server notices, which takes a moment), a
			// new one is let in.
			first.Close()
			for deadline := time.Now().Add(10 * time.Second); !wiretest.Dial(t, addr).Answered(4); {
				if time.Now().After(deadline) {
					t.Fatal("no connection let in after one of the two left")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestIdleConnectionIsClosedButOneWaitingForAnAnswerIsNot(t *testing.T) {
	// 1 s, not less: the waiting connection must get its fetch in before
	// it is idle that long, on a loaded machine too.
	_, addr, b := startServerWith(t, map[string]string{"connections.max.idle.ms": "1000"}, nil)
	idle := wiretest.Dial(t, addr)
	if !idle.Answered(1) {
		t.Fatal("no answer")
	}
	waiting := wiretest.Dial(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(17)
	waiting.Send(fetch, 2) // parks until released
	if !closedByServer(idle, 10*time.Second) {
		t.Fatal("an idle connection was left open")
	}
	// Several idle intervals later the parked fetch has kept the other
	// connection open, and it gets its answer.
	time.Sleep(2500 * time.Millisecond)
	close(b.Release)
	waiting.SetReadDeadline(time.Now().Add(10 * time.Second))
	if corr, _ := waiting.Recv(fetch); corr != 2 {
		t.Fatalf("parked fetch answered with corr %d", corr)
	}
	if !waiting.Answered(3) {
		t.Fatal("the connection that waited for an answer was closed as idle")
	}
}

// The idle clock restarts when an answer is written: a client answered
// just before its read deadline would have passed keeps the whole
// connections.max.idle.ms to send its next request. (It used to be closed
// at that deadline, moments after the answer.)
func TestAnswerRestartsTheIdleClock(t *testing.T) {
	_, addr, b := startServerWith(t, map[string]string{"connections.max.idle.ms": "1000"}, nil)
	c := wiretest.Dial(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(17)
	c.Send(fetch, 1) // parks until released
	// The server's read deadline falls about 1000 ms after the fetch was
	// read; the answer goes out 100 ms before it, and the next request
	// comes 200 ms after the answer.
	time.Sleep(900 * time.Millisecond)
	close(b.Release)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if corr, _ := c.Recv(fetch); corr != 1 {
		t.Fatalf("parked fetch answered with corr %d", corr)
	}
	time.Sleep(200 * time.Millisecond)
	if !c.Answered(2) {
		t.Fatal("the connection was closed as idle 200 ms after its answer, with connections.max.idle.ms 1000")
	}
}

// A client that sends and never reads is cut off by the write deadline
// (connections.max.idle.ms without taking a byte), so it does not pin the
// handler that writes to it.
func TestClientThatNeverReadsLosesItsConnection(t *testing.T) {
	s, addr, _ := startServerWith(t, map[string]string{"connections.max.idle.ms": "300"}, nil)
	c := wiretest.Dial(t, addr)
	if !c.Answered(0) {
		t.Fatal("no answer")
	}
	req := kmsg.NewPtrApiVersionsRequest()
	one := protocol.AppendFrame(nil, req.AppendTo(protocol.AppendRequestHeader(nil, req, 1, "test")))
	burst := bytes.Repeat(one, 1000)
	go func() {
		// Each answer is ~1 KiB: enough requests fill both socket buffers.
		for {
			c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := c.Write(burst); err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		s.conns.mu.Lock()
		total := s.conns.total
		s.conns.mu.Unlock()
		if total == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the connection of a client that never reads is still open")
}

// kmsg refuses an array count larger than the bytes left before it
// allocates anything; the refusal is logged in kraftd's words, with what
// the request was.
func TestHugeArrayCountIsRefusedWithoutAllocating(t *testing.T) {
	logs := &logBuffer{}
	s, addr, _ := startServerWith(t, nil, logs)
	// DescribeConfigs v4 (flexible): one resource whose ConfigNames compact
	// array claims 2^31-2 names, in a frame of a few bytes.
	header := protocol.AppendRequestHeader(nil, &kmsg.DescribeConfigsRequest{Version: 4}, 7, "hostile")
	body := []byte{2 /* one resource */, 2 /* type */, 2, 'x' /* name */, 0xff, 0xff, 0xff, 0xff, 0x07 /* names */, 0}
	frame := append(header, body...)
	// Fetch v4 (not flexible): a topic array claiming 2^31-1 topics.
	fetch := protocol.AppendRequestHeader(nil, &kmsg.FetchRequest{Version: 4}, 8, "hostile")
	fetch = append(fetch, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0x7f, 0xff, 0xff, 0xff)
	for _, f := range [][]byte{frame, fetch} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := s.decode(f)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatal("decoded")
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Fatalf("decoding allocated %d bytes", grew)
		}
	}
	c := wiretest.Dial(t, addr)
	c.Raw(protocol.AppendFrame(nil, frame))
	if !closedByServer(c, 10*time.Second) {
		t.Fatal("connection left open")
	}
	want := []string{`"api":"DescribeConfigs"`, `"version":4`, `"correlation_id":7`, `"client_id":"hostile"`, `"reason":"body does not decode: `}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		line := logs.String()
		missing := ""
		for _, w := range want {
			if !strings.Contains(line, w) {
				missing = w
			}
		}
		if missing == "" {
			if strings.Contains(line, "enough data") {
				t.Fatalf("logged in the decoding library's words: %s", line)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %s: %s", missing, line)
		}
	}
}

// A frame over smallRequestMax is refused from its key alone, before its
// body is read, unless the key is a bulk request; that one is read in full
// (this one's zero body then fails to decode).
func TestLargeFramesOnlyForBulkRequests(t *testing.T) {
	logs := &logBuffer{}
	_, addr, _ := startServerWith(t, map[string]string{"socket.request.max.bytes": "8388608"}, logs)
	const size = 2 << 20
	vote := wiretest.Dial(t, addr)
	vote.Raw(binary.BigEndian.AppendUint32(nil, size))
	vote.Raw([]byte{0, 52, 0, 1}) // Vote v1, and nothing more
	if !closedByServer(vote, 10*time.Second) {
		t.Fatal("a 2 MiB Vote frame was waited for")
	}
	if !strings.Contains(logs.String(), "frame of 2097152 bytes for Vote (key 52) exceeds the 1048576 bytes") {
		t.Fatalf("the refusal was not logged as too large for Vote:\n%s", logs.String())
	}
	create := wiretest.Dial(t, addr)
	body := make([]byte, size)
	binary.BigEndian.PutUint16(body, 19) // CreateTopics v0, zeros after
	create.Raw(binary.BigEndian.AppendUint32(nil, size))
	create.Raw(body)
	if !closedByServer(create, 10*time.Second) {
		t.Fatal("a zero CreateTopics body was not refused")
	}
	if strings.Contains(logs.String(), "for CreateTopics (key 19) exceeds") {
		t.Fatal("a 2 MiB CreateTopics frame was refused for its size")
	}
	if other := wiretest.Dial(t, addr); !other.Answered(1) {
		t.Fatal("another client was not served after the refusals")
	}
}
