package peer

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/quorum"
)

// A peer that accepts connections but never answers (a SIGSTOPped process)
// must not build a backlog: requests that waited in its queue longer than
// the request timeout fail at once instead of each waiting out its own
// timeout, and are never sent late. Found in a mixed quorum: after a voter
// was paused for a few seconds, a kraftd leader's queue to it was full of
// stale Vote and Fetch requests, refusing new ones.
func TestPeersFailStaleRequestsAtOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	results := make(chan Result, 16)
	p := New("test", 200*time.Millisecond, func(r Result) { results <- r }, zerolog.Nop())
	defer p.Close()
	p.SetAddress(2, l.Addr().String())
	const n = 5
	for i := range n {
		p.Send(2, uint64(i+1), kmsg.NewPtrBeginQuorumEpochRequest())
	}
	stale := 0
	for range n {
		r := <-results
		if r.Err == nil {
			t.Fatalf("request %d answered by a peer that never answers", r.Tag)
		}
		if errors.Is(r.Err, ErrStale) {
			stale++
		}
	}
	// The first request times out on the wire; all the others waited
	// longer than the timeout behind it.
	if stale != n-1 {
		t.Errorf("%d of %d requests failed as stale, want %d", stale, n, n-1)
	}
}

// The core fails over fast only on ErrPeerGone, so the client must tell a
// peer whose process is gone (its host refuses or closes the connection)
// from one that is merely silent (the deadline passes).
func TestPeersWordConnectionLossApartFromTimeout(t *testing.T) {
	send := func(t *testing.T, addr string) error {
		t.Helper()
		results := make(chan Result, 1)
		p := New("test", 200*time.Millisecond, func(r Result) { results <- r }, zerolog.Nop())
		defer p.Close()
		p.SetAddress(2, addr)
		p.Send(2, 1, kmsg.NewPtrFetchRequest())
		return (<-results).Err
	}
	listen := func(t *testing.T, serve func(net.Conn)) string {
		t.Helper()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				serve(c)
			}
		}()
		return l.Addr().String()
	}
	t.Run("refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // nothing listens there any more
		if err := send(t, addr); !errors.Is(err, quorum.ErrPeerGone) {
			t.Errorf("connect to a closed port: %v, want ErrPeerGone", err)
		}
	})
	t.Run("closed by the peer", func(t *testing.T) {
		addr := listen(t, func(c net.Conn) { c.Close() })
		if err := send(t, addr); !errors.Is(err, quorum.ErrPeerGone) {
			t.Errorf("connection closed by the peer: %v, want ErrPeerGone", err)
		}
	})
	t.Run("silent", func(t *testing.T) {
		var held []net.Conn
		addr := listen(t, func(c net.Conn) { held = append(held, c) })
		err := send(t, addr)
		if !errors.Is(err, quorum.ErrTimeout) || errors.Is(err, quorum.ErrPeerGone) {
			t.Errorf("peer that never answers: %v, want ErrTimeout only", err)
		}
	})
}

// A peer replaced by another process on the same address (a controller
// restarted, or a node id taken over by a new controller on the old port,
// as a rolling replacement does) has closed the connection kept from
// before. The next request must reach the new process on a new connection,
// as Apache's network client, which sees the close while the connection is
// idle, does. Found by TestRollingReplacement: a kraftd leader that had
// fetched from an Apache controller answered add-controller of the kraftd
// that replaced it on the same port with "voter 3 did not answer
// ApiVersions: ... EOF".
func TestPeersReconnectToAPeerRestartedOnTheSameAddress(t *testing.T) {
	first, addr := startServer(t)
	results := make(chan Result, 1)
	p := New("test", 5*time.Second, func(r Result) { results <- r }, zerolog.Nop())
	defer p.Close()
	p.SetAddress(2, addr)
	describe := func(tag uint64) Result {
		dq := kmsg.NewPtrDescribeQuorumRequest()
		dq.SetVersion(dq.MaxVersion())
		p.Send(2, tag, dq)
		return <-results
	}
	if r := describe(1); r.Err != nil {
		t.Fatalf("first request: %v", r.Err)
	}
	first.Close()
	startServerAt(t, addr)
	if r := describe(2); r.Err != nil {
		t.Errorf("request to the process now serving %s: %v, want an answer", addr, r.Err)
	}
}
