package nemesis

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCutDropsOneWay makes two nodes out of this process: it moves itself
// into each node's cgroup while it opens that node's sockets (a socket
// keeps the cgroup it was made in, and an accepted one its listener's),
// connects them both ways, and checks that Cut drops exactly one
// direction on both connections, Heal restores them, Isolate drops both,
// and another Net's cuts of nodes with the same ids drop nothing here.
func TestCutDropsOneWay(t *testing.T) {
	n := NewNet(t)
	la, lb := listen(t), listen(t)
	a := n.Node(1, la.Addr().(*net.TCPAddr).Port)
	b := n.Node(2, lb.Addr().(*net.TCPAddr).Port)
	home := ownCgroup(t, n.mount)
	// Listeners were made outside the nodes' cgroups; make them again inside.
	la.Close()
	lb.Close()
	join(t, a)
	la = listenOn(t, la.Addr().String())
	join(t, b)
	lb = listenOn(t, lb.Addr().String())
	bToA := dial(t, la.Addr().String()) // made in b
	join(t, a)
	aToB := dial(t, lb.Addr().String()) // made in a
	join(t, home)
	aSide := map[string]net.Conn{"a->b": aToB, "b->a": accept(t, la)}
	bSide := map[string]net.Conn{"a->b": accept(t, lb), "b->a": bToA}

	// flows writes a byte each way on each connection and checks which
	// arrive; it returns the receivers of those that did not.
	flows := func(want map[string]bool) (held []net.Conn) {
		t.Helper()
		for conn := range aSide {
			for _, d := range []struct {
				from       string
				send, recv net.Conn
			}{{"a", aSide[conn], bSide[conn]}, {"b", bSide[conn], aSide[conn]}} {
				what := d.from + " sends on " + conn
				// A byte that should pass may take long on a loaded
				// machine; one that should not is watched for a second.
				wait := time.Second
				if want[what] {
					wait = time.Minute
				}
				got := passes(d.send, d.recv, wait)
				if got != want[what] {
					t.Errorf("%s: passes %v, want %v", what, got, want[what])
				}
				if !got {
					held = append(held, d.recv)
				}
			}
		}
		return held
	}
	all := map[string]bool{"a sends on a->b": true, "a sends on b->a": true, "b sends on a->b": true, "b sends on b->a": true}
	flows(all)
	// Another test's Net, whose nodes have the same ids, cuts its own.
	other := NewNet(t)
	other.Node(1, 1)
	other.Node(2, 2)
	other.Isolate(1)
	flows(all)
	other.Heal()
	n.Cut(1, 2)
	held := flows(map[string]bool{"b sends on a->b": true, "b sends on b->a": true})
	n.Heal()
	for _, c := range held { // what the cut held back arrives once retransmitted
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatalf("after Heal: %v", err)
		}
	}
	flows(all)
	n.Isolate(2)
	flows(map[string]bool{})
}

// passes reports whether a byte written on from arrives at to within wait.
func passes(from, to net.Conn, wait time.Duration) bool {
	if _, err := from.Write([]byte{1}); err != nil {
		return false
	}
	_ = to.SetReadDeadline(time.Now().Add(wait))
	_, err := io.ReadFull(to, make([]byte, 1))
	return err == nil
}

func listen(t *testing.T) net.Listener { return listenOn(t, "127.0.0.1:0") }

func listenOn(t *testing.T, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func accept(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// join moves this whole process into the cgroup directory dir.
func join(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0o644); err != nil {
		t.Fatalf("join %s: %v", dir, err)
	}
}

// ownCgroup is this process's cgroup v2 directory under mount, which the
// test's end moves it back to.
func ownCgroup(t *testing.T, mount string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			dir := filepath.Join(mount, rel)
			t.Cleanup(func() { _ = os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0o644) })
			return dir
		}
	}
	t.Fatal("no cgroup v2 line in /proc/self/cgroup")
	return ""
}
