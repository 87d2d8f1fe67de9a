package metrics

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/peer"
	"github.com/kraftd/kraftd/quorum"
)

// fixedSource is a Source of a lone leader with an empty image.
type fixedSource struct{}

func (fixedSource) NodeID() int32 { return 1 }
func (fixedSource) Status() quorum.Status {
	return quorum.Status{SoftState: quorum.SoftState{Role: quorum.RoleLeader, LeaderID: 1, Epoch: 1, VotedID: 1, IsVoter: true, EpochCommitted: true},
		Voters: quorum.VoterSet{{ID: 1}}, LeaderContactMs: -1}
}
func (fixedSource) Applied() int64                                { return 0 }
func (fixedSource) Cluster() controller.ClusterStats              { return controller.ClusterStats{} }
func (fixedSource) HeartbeatAges() map[int32]time.Duration        { return nil }
func (fixedSource) UnresolvedPeers() map[int32]string             { return nil }
func (fixedSource) PeerClusterMismatches() []peer.ClusterMismatch { return nil }
func (fixedSource) TimedOutHeartbeats() int64                     { return 0 }
func (fixedSource) PeerTraffic() map[int32]peer.Traffic           { return nil }

func serveWith(t *testing.T, lim HTTPLimits) string {
	t.Helper()
	l, err := New().Serve("127.0.0.1:0", fixedSource{}, ServeOptions{Bounds: ReadyBounds{MaxContactAgeMs: 1000, MaxLagRecords: 1}, Limits: lim}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l.Addr().String()
}

// keepAlive connects and gets /healthz once, leaving the connection open
// as a keep-alive client does.
func keepAlive(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c
}

// TestMetricsListenerClosesIdleConnections checks that keep-alive
// connections that send nothing more, and connections that never finish
// a request header, are closed by the listener.
func TestMetricsListenerClosesIdleConnections(t *testing.T) {
	addr := serveWith(t, HTTPLimits{Idle: time.Second, ReadHeader: time.Second})
	var conns []net.Conn
	for range 20 {
		conns = append(conns, keepAlive(t, addr))
	}
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "GET /metrics HTTP/1.1\r\nHost:")
	conns = append(conns, slow)
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("connection %d: %v, not closed by the listener", i, err)
		}
	}
}

// TestMetricsListenerCapsConnections holds the cap's worth of keep-alive
// connections and opens 500 more: the listener takes no more file
// descriptors for them (they wait in the kernel's accept queue), and
// serves them once the held ones close.
func TestMetricsListenerCapsConnections(t *testing.T) {
	const capacity, extra = 8, 500
	addr := serveWith(t, HTTPLimits{MaxConnections: capacity, Idle: 10 * time.Minute})
	var held []net.Conn
	for range capacity {
		held = append(held, keepAlive(t, addr))
	}
	fds, rss := openFDs(t), rssKiB(t)
	var waiting []net.Conn
	for range extra {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Minute))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, c)
	}
	// Give the listener every chance to take them.
	time.Sleep(time.Second)
	if now := openFDs(t); now > fds+extra+16 {
		t.Fatalf("%d file descriptors open with %d connections over the cap of %d, %d before: the listener took them", now, extra, capacity, fds)
	}
	t.Logf("RSS %d KiB before the %d connections over the cap, %d KiB after", rss, extra, rssKiB(t))
	for _, c := range held {
		c.Close()
	}
	for i, c := range waiting {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("waiting connection %d: %v", i, err)
		}
		resp.Body.Close()
		c.Close()
	}
}

func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(entries)
}

// rssKiB is VmRSS from /proc/self/status, 0 where there is none.
func rssKiB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return n
		}
	}
	return 0
}
