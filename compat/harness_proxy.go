package compat

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// Exchange is one request frame and the response frame that answered it, as
// they crossed a FrameProxy: payloads without the 4-byte size prefix.
type Exchange struct {
	Key           int16
	Version       int16
	CorrelationID int32
	Request       []byte
	Response      []byte
}

// FrameProxy listens on 127.0.0.1, forwards every connection it accepts to a
// target and records the Kafka frames going through, so that tests get the
// exact bytes Apache peers send each other. It forwards frame by frame (not
// byte by byte) because it must see frame boundaries to record them; the
// added latency is one frame, which Kafka peers do not notice.
type FrameProxy struct {
	Target string
	// PerKey caps how many exchanges are kept per API key; a running quorum
	// sends Fetch several times a second and the tests need only a few.
	PerKey int

	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	kept  map[int16][]Exchange
	seen  map[int16]int
	wg    sync.WaitGroup
}

// StartFrameProxy listens on a free 127.0.0.1 port and forwards to target.
// The proxy is closed when the test ends.
func StartFrameProxy(t testing.TB, target string) *FrameProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("compat: proxy listen: %v", err)
	}
	p := &FrameProxy{Target: target, PerKey: 16, ln: ln,
		conns: map[net.Conn]struct{}{}, kept: map[int16][]Exchange{}, seen: map[int16]int{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Port is the port the proxy listens on.
func (p *FrameProxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Addr is the proxy's 127.0.0.1 address.
func (p *FrameProxy) Addr() string { return p.ln.Addr().String() }

// Exchanges returns the kept exchanges for key, in the order their responses
// arrived.
func (p *FrameProxy) Exchanges(key int16) []Exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Exchange(nil), p.kept[key]...)
}

// Seen returns how many complete exchanges went through per API key,
// including those beyond PerKey.
func (p *FrameProxy) Seen() map[int16]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[int16]int, len(p.seen))
	for k, n := range p.seen {
		m[k] = n
	}
	return m
}

// Close stops accepting, closes every proxied connection (both sides) and
// waits for the forwarding goroutines to end.
func (p *FrameProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil // serve goroutines starting now close their sockets at once
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *FrameProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *FrameProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *FrameProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// pending are the requests of one connection awaiting their response, by
// correlation id. Kafka answers in order on a connection, but matching by id
// also copes with a response that never comes (the peer went away).
type pending struct {
	mu   sync.Mutex
	reqs map[int32]Exchange
}

func (p *FrameProxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	server, err := net.Dial("tcp", p.Target)
	if err != nil {
		return // the client sees its connection closed, as with a down peer
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)

	inflight := &pending{reqs: map[int32]Exchange{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Closing both ends lets the other direction's read return.
		defer client.Close()
		defer server.Close()
		p.forward(client, server, func(frame []byte) {
			if len(frame) < 8 {
				return
			}
			x := Exchange{
				Key:           int16(binary.BigEndian.Uint16(frame[0:])),
				Version:       int16(binary.BigEndian.Uint16(frame[2:])),
				CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
				Request:       frame,
			}
			inflight.mu.Lock()
			inflight.reqs[x.CorrelationID] = x
			inflight.mu.Unlock()
		})
	}()
	p.forward(server, client, func(frame []byte) {
		if len(frame) < 4 {
			return
		}
		corr := int32(binary.BigEndian.Uint32(frame))
		inflight.mu.Lock()
		x, ok := inflight.reqs[corr]
		delete(inflight.reqs, corr)
		inflight.mu.Unlock()
		if !ok {
			return
		}
		x.Response = frame
		p.keep(x)
	})
	client.Close()
	server.Close()
	<-done
}

func (p *FrameProxy) keep(x Exchange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[x.Key]++
	if len(p.kept[x.Key]) < p.PerKey {
		p.kept[x.Key] = append(p.kept[x.Key], x)
	}
}

// forward copies frames from src to dst, calling record with each payload
// before writing it on, so a recorded request is always known by the time
// its response can arrive.
func (p *FrameProxy) forward(src, dst net.Conn, record func([]byte)) {
	var size [4]byte
	for {
		if _, err := io.ReadFull(src, size[:]); err != nil {
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 0 || n > MaxFrame {
			return // not Kafka framing; drop the connection
		}
		frame := make([]byte, 4+n)
		copy(frame, size[:])
		if _, err := io.ReadFull(src, frame[4:]); err != nil {
			return
		}
		record(frame[4:])
		if _, err := dst.Write(frame); err != nil {
			return
		}
	}
}
