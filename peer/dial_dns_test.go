package peer

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dnsServer is a DNS server on a loopback UDP port that answers A queries
// for the names it is told, NXDOMAIN for the others, and counts queries.
type dnsServer struct {
	conn    net.PacketConn
	mu      sync.Mutex
	records map[string]net.IP // lower-case name with its final dot
	queries atomic.Int64
}

func startDNS(t *testing.T) *dnsServer {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dnsServer{conn: c, records: map[string]net.IP{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := s.answer(buf[:n]); resp != nil {
				c.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return s
}

func (s *dnsServer) set(name string, ip net.IP) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ip == nil {
		delete(s.records, name)
	} else {
		s.records[name] = ip
	}
}

// resolver is a Go resolver that asks only s.
func (s *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.conn.LocalAddr().String())
	}}
}

// answer builds the response to one query (RFC 1035, section 4): the
// question echoed, and an A record for a known name asked type A.
func (s *dnsServer) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	question := q[12 : i+5]
	qtype := binary.BigEndian.Uint16(q[i+1:])
	s.queries.Add(1)
	s.mu.Lock()
	ip, known := s.records[strings.ToLower(strings.Join(labels, "."))+"."]
	s.mu.Unlock()
	resp := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}, question...)
	switch {
	case !known:
		resp[3] |= 3 // NXDOMAIN
	case qtype == 1:
		resp[7] = 1
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
		resp = append(resp, ip.To4()...)
	}
	return resp
}

// A controller named by host name is looked up at every connection
// attempt, through a real DNS server on loopback: a name that does not
// resolve yet fails its requests (backed off, so it is not asked at every
// retry) while another peer is served; once it resolves the peer is
// reached; and when the name moves to another address (the process there
// replaced, as a rescheduled pod is) the next connection follows it, with
// no address kept from an earlier lookup.
func TestPeersResolveNamesAtEveryDial(t *testing.T) {
	t.Parallel()
	dns := startDNS(t)
	first, firstAddr := startServer(t)
	_, port, _ := net.SplitHostPort(firstAddr)
	results := make(chan Result, 4)
	p := New("test", 5*time.Second, func(r Result) { results <- r }, zerolog.New(zerolog.NewTestWriter(t)))
	p.resolver = dns.resolver()
	defer p.Close()
	const named, other = 2, 3
	p.SetAddress(named, net.JoinHostPort("controller-2.kraftd.test", port))
	p.SetAddress(other, firstAddr)
	ask := func(id int32) Result {
		dq := kmsg.NewPtrDescribeQuorumRequest()
		dq.SetVersion(dq.MaxVersion())
		p.Send(id, 0, dq)
		return <-results
	}

	r := ask(named)
	var dnsErr *net.DNSError
	if !errors.As(r.Err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("a name not in DNS: %v, want a not-found lookup error", r.Err)
	}
	if got := p.Unresolved(); !strings.Contains(got[named], "no such host") {
		t.Errorf("Unresolved() = %v, want peer %d with its lookup error", got, named)
	}
	if r := ask(other); r.Err != nil {
		t.Errorf("another peer while the name does not resolve: %v", r.Err)
	}
	asked := dns.queries.Load()
	for range 20 {
		ask(named)
	}
	if n := dns.queries.Load() - asked; n > 8 {
		t.Errorf("20 requests at once after a failed lookup asked DNS %d times: want a backoff", n)
	}

	dns.set("controller-2.kraftd.test.", net.IPv4(127, 0, 0, 1))
	waitAnswer(t, "the name once it resolves", func() error { return ask(named).Err })
	if got := p.Unresolved(); len(got) != 0 {
		t.Errorf("Unresolved() = %v once the name resolves", got)
	}

	// The process behind the name is replaced on another address.
	first.Close()
	startServerAt(t, net.JoinHostPort("127.0.0.2", port))
	asked = dns.queries.Load()
	dns.set("controller-2.kraftd.test.", net.IPv4(127, 0, 0, 2))
	waitAnswer(t, "the name's new address", func() error { return ask(named).Err })
	if dns.queries.Load() == asked {
		t.Error("the new connection was made without a lookup")
	}
}

func waitAnswer(t *testing.T, what string, ask func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err = ask(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}
