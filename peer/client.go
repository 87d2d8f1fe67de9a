package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/kraftd/kraftd/protocol"
	"github.com/kraftd/kraftd/quorum"
)

// ErrUnsupported means the peer does not serve the request's API at a
// version that can carry it (a pre-vote to a peer without Vote v2).
var ErrUnsupported = errors.New("peer: peer does not support this request version")

// Result is the outcome of one outbound request.
type Result struct {
	NodeID   int32
	Tag      uint64 // the caller's id for the request
	Request  kmsg.Request
	Response kmsg.Response // nil when Err is set
	Err      error
}

// Client is kraftd's outbound client for peer RPCs. Each peer has one
// connection with one request in flight, as Apache's raft client has; a new
// connection first negotiates versions with ApiVersions, and requests are
// sent at the highest version both sides speak.
type Client struct {
	log      zerolog.Logger
	clientID string
	timeout  time.Duration
	deliver  func(Result)
	// handshake, when set, is the controller listener's TLS: peers are
	// reached with its security protocol, keystore and truststore, as an
	// Apache controller reaches them.
	handshake Handshake
	// sasl, when set, is how peers are authenticated to on a SASL
	// controller listener.
	sasl sasl.Mechanism
	// resolver looks peers' host names up; nil is the system's. Tests
	// point it at a DNS server of their own.
	resolver *net.Resolver

	mu    sync.Mutex
	peers map[int32]*peer
	done  chan struct{}
	wg    sync.WaitGroup
}

type peer struct {
	id    int32
	addr  string
	queue chan outbound
	// versions are the peer's ranges from ApiVersions; nil until negotiated.
	versions map[int16]protocol.VersionRange
	vmu      sync.Mutex
	busy     atomic.Int32 // 1 while a request is in flight
	// lastTLSFailure is the last handshake failure logged, so a peer
	// retried every backoff is logged once per distinct reason.
	lastTLSFailure  string
	lastSASLFailure string
	traffic         peerTraffic
	lookup          peerLookup
}

// peerTraffic counts what went to and came from one peer, for metrics
// (Apache's raft-channel-metrics): frames and their bytes, size fields
// included.
type peerTraffic struct {
	requests, responses, bytesOut, bytesIn atomic.Int64
}

// Traffic is a snapshot of the traffic with one peer.
type Traffic struct {
	Requests, Responses, BytesOut, BytesIn int64
}

// Traffic is the traffic with each peer this client has talked to, by node
// id, since it started.
func (p *Client) Traffic() map[int32]Traffic {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[int32]Traffic, len(p.peers))
	for id, pr := range p.peers {
		t := &pr.traffic
		out[id] = Traffic{Requests: t.requests.Load(), Responses: t.responses.Load(), BytesOut: t.bytesOut.Load(), BytesIn: t.bytesIn.Load()}
	}
	return out
}

type outbound struct {
	tag    uint64
	req    kmsg.Request
	queued time.Time
}

// ErrStale fails a request that waited in a peer's queue longer than
// the request timeout (behind requests to a peer that stopped answering):
// the quorum core has timed it out and sent a newer one, and sending it
// late would only delay that one.
var ErrStale = errors.New("peer: request went stale waiting for an unresponsive peer")

// New returns a client whose results all go to deliver, which must not
// block for long.
func New(clientID string, timeout time.Duration, deliver func(Result), log zerolog.Logger) *Client {
	return &Client{log: log, clientID: clientID, timeout: timeout, deliver: deliver, peers: map[int32]*peer{}, done: make(chan struct{})}
}

// Handshake runs the client side of TLS over c, a connection just dialed
// to addr, within timeout. Its error is logged as the reason the peer was
// not reached.
type Handshake func(c net.Conn, addr string, timeout time.Duration) (net.Conn, error)

// UseSecurity makes every later connection a TLS one through h, and
// authenticate with m after ApiVersions, as an Apache controller's raft
// client does. Either may be nil: no TLS, no SASL.
func (p *Client) UseSecurity(h Handshake, m sasl.Mechanism) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.handshake, p.sasl = h, m
}

// SetAddress sets (or changes) where node id is reached.
func (p *Client) SetAddress(id int32, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.peers[id]; ok {
		if old.addr == addr {
			return
		}
		close(old.queue)
	}
	pr := &peer{id: id, addr: addr, queue: make(chan outbound, 64)}
	p.peers[id] = pr
	p.wg.Add(1)
	go p.run(pr)
}

// Addr is where node id is reached; "" when unknown.
func (p *Client) Addr(id int32) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr := p.peers[id]; pr != nil {
		return pr.addr
	}
	return ""
}

// MaxVersion returns the highest version of key the peer serves, if known.
func (p *Client) MaxVersion(id int32, key int16) (int16, bool) {
	p.mu.Lock()
	pr := p.peers[id]
	p.mu.Unlock()
	if pr == nil {
		return 0, false
	}
	pr.vmu.Lock()
	defer pr.vmu.Unlock()
	r, ok := pr.versions[key]
	return r.Max, ok
}

// Send queues req for node id. The result arrives through deliver; a full
// queue or unknown node fails at once.
func (p *Client) Send(id int32, tag uint64, req kmsg.Request) {
	p.mu.Lock()
	pr := p.peers[id]
	var err error
	if pr == nil {
		err = fmt.Errorf("peer: no address for node %d", id)
	} else {
		select {
		case pr.queue <- outbound{tag: tag, req: req, queued: time.Now()}:
		default:
			err = fmt.Errorf("peer: send queue to node %d is full", id)
		}
	}
	p.mu.Unlock()
	if err != nil {
		p.deliver(Result{NodeID: id, Tag: tag, Request: req, Err: err})
	}
}

// Close stops every peer connection and waits for them.
func (p *Client) Close() {
	p.mu.Lock()
	select {
	case <-p.done:
	default:
		close(p.done)
		for _, pr := range p.peers {
			close(pr.queue)
		}
		p.peers = map[int32]*peer{}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Client) run(pr *peer) {
	defer p.wg.Done()
	var conn *peerConn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for out := range pr.queue {
		pr.busy.Store(1)
		if time.Since(out.queued) > p.timeout {
			p.deliver(Result{NodeID: pr.id, Tag: out.tag, Request: out.req, Err: ErrStale})
			pr.busy.Store(0)
			continue
		}
		if conn != nil && conn.reauthDue(time.Now()) {
			// KIP-368: re-authenticate in place before the session ends;
			// if that fails, a fresh connection authenticates anew.
			if err := p.login(pr, conn); err != nil {
				conn.Close()
				conn = nil
			}
		}
		reused := conn != nil
		if conn == nil {
			c, err := p.connect(pr)
			if err != nil {
				p.deliver(Result{NodeID: pr.id, Tag: out.tag, Request: out.req, Err: peerError(err)})
				pr.busy.Store(0)
				continue
			}
			conn = c
		}
		resp, err := p.roundTrip(pr, conn, out.req)
		if reused && closedByPeer(err) {
			// The peer closed the connection while it sat idle: its
			// process ended, and another may serve the address now (a
			// restart, or a replacement controller on the old port).
			// Apache's client sees the close before sending and
			// reconnects; here the send finds it, so try once more on a
			// new connection. Every raft RPC may be sent twice.
			conn.Close()
			conn = nil
			if c, cerr := p.connect(pr); cerr != nil {
				err = cerr
			} else {
				conn = c
				resp, err = p.roundTrip(pr, conn, out.req)
			}
		}
		if err != nil && conn != nil && !errors.Is(err, ErrUnsupported) {
			// The connection is in an unknown state: start afresh next time.
			conn.Close()
			conn = nil
		}
		if err != nil && !errors.Is(err, ErrUnsupported) {
			err = peerError(err)
		}
		p.deliver(Result{NodeID: pr.id, Tag: out.tag, Request: out.req, Response: resp, Err: err})
		pr.busy.Store(0)
	}
}

// closedByPeer reports whether an exchange failed because the peer had
// closed or reset the connection, rather than by a timeout or bad bytes.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// peerError words a failed connect or exchange for the quorum core. A
// connection the peer's host refused, reset or closed is quorum.ErrPeerGone:
// that is what a kernel does for a process that died, at once, where a
// machine that vanished only lets the deadline pass (quorum.ErrTimeout).
// The core acts on the difference, so nothing that might be a slow but
// live peer is called gone.
func peerError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %w", quorum.ErrPeerGone, err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: %w", quorum.ErrTimeout, err)
	}
	return err
}

type peerConn struct {
	net.Conn
	r       *bufio.Reader
	corr    int32
	traffic *peerTraffic
	// reauthAt is when to re-authenticate (KIP-368): a random point
	// between 85% and 95% of the session lifetime the peer granted, as
	// Apache's client picks it; zero when the peer granted none.
	reauthAt time.Time
}

// reauthDue reports whether the connection should re-authenticate before
// its next request.
func (c *peerConn) reauthDue(now time.Time) bool {
	return !c.reauthAt.IsZero() && !now.Before(c.reauthAt)
}

// setSessionLifetime schedules the next re-authentication after an
// exchange that completed at now and granted lifetime.
func (c *peerConn) setSessionLifetime(now time.Time, lifetime time.Duration) {
	c.reauthAt = time.Time{}
	if lifetime > 0 {
		c.reauthAt = now.Add(time.Duration(float64(lifetime) * (0.85 + 0.10*rand.Float64())))
	}
}

func (p *Client) connect(pr *peer) (*peerConn, error) {
	c, err := p.dial(pr)
	if err != nil {
		return nil, err
	}
	if c, err = p.secure(pr, c); err != nil {
		return nil, err
	}
	conn := &peerConn{Conn: c, r: bufio.NewReader(c), traffic: &pr.traffic}
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kraftd", "0.1.0"
	resp, err := p.exchange(conn, req)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("peer: ApiVersions with node %d: %w", pr.id, err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 && av.ErrorCode != kerr.UnsupportedVersion.Code {
		c.Close()
		return nil, fmt.Errorf("peer: ApiVersions with node %d: %w", pr.id, kerr.ErrorForCode(av.ErrorCode))
	}
	versions := map[int16]protocol.VersionRange{}
	for _, k := range av.ApiKeys {
		versions[k.ApiKey] = protocol.VersionRange{Min: k.MinVersion, Max: k.MaxVersion}
	}
	pr.vmu.Lock()
	pr.versions = versions
	pr.vmu.Unlock()
	if err := p.login(pr, conn); err != nil {
		c.Close()
		return nil, err
	}
	return conn, nil
}

// secure runs the TLS handshake with the peer when the controller
// listener is SSL; a failure closes the connection and is logged once per
// distinct reason (wrong CA, expired certificate, host name mismatch).
func (p *Client) secure(pr *peer, c net.Conn) (net.Conn, error) {
	p.mu.Lock()
	h := p.handshake
	p.mu.Unlock()
	if h == nil {
		return c, nil
	}
	tc, err := h(c, pr.addr, p.timeout)
	if err != nil {
		c.Close()
		if msg := err.Error(); msg != pr.lastTLSFailure {
			pr.lastTLSFailure = msg
			p.log.Warn().Int32("peer", pr.id).Str("addr", pr.addr).Str("reason", msg).Msg("TLS handshake with peer failed; closing connection")
		}
		return nil, fmt.Errorf("peer: node %d: %w", pr.id, err)
	}
	pr.lastTLSFailure = ""
	return tc, nil
}

// roundTrip sends req at the highest version both sides serve, not above the
// version the caller set.
func (p *Client) roundTrip(pr *peer, conn *peerConn, req kmsg.Request) (kmsg.Response, error) {
	pr.vmu.Lock()
	r, ok := pr.versions[req.Key()]
	pr.vmu.Unlock()
	if !ok || r.Min > req.GetVersion() {
		return nil, fmt.Errorf("%w: node %d does not serve %s", ErrUnsupported, pr.id, kmsg.NameForKey(req.Key()))
	}
	if r.Max < req.GetVersion() {
		if v, isVote := req.(*kmsg.VoteRequest); isVote && r.Max < 2 && isPreVote(v) {
			return nil, fmt.Errorf("%w: node %d has no pre-vote (Vote v%d)", ErrUnsupported, pr.id, r.Max)
		}
		req.SetVersion(r.Max)
	}
	return p.exchange(conn, req)
}

func isPreVote(v *kmsg.VoteRequest) bool {
	for _, t := range v.Topics {
		for _, part := range t.Partitions {
			if part.PreVote {
				return true
			}
		}
	}
	return false
}

func (p *Client) exchange(conn *peerConn, req kmsg.Request) (kmsg.Response, error) {
	conn.corr++
	payload := req.AppendTo(protocol.AppendRequestHeader(nil, req, conn.corr, p.clientID))
	deadline := time.Now().Add(p.timeout)
	if f, ok := req.(*kmsg.FetchRequest); ok {
		deadline = deadline.Add(time.Duration(f.MaxWaitMillis) * time.Millisecond)
	}
	conn.SetDeadline(deadline)
	if _, err := conn.Write(protocol.AppendFrame(nil, payload)); err != nil {
		return nil, err
	}
	conn.traffic.requests.Add(1)
	conn.traffic.bytesOut.Add(int64(len(payload) + 4))
	frame, err := protocol.ReadFrame(conn.r, 1<<30)
	if err != nil {
		return nil, err
	}
	conn.traffic.responses.Add(1)
	conn.traffic.bytesIn.Add(int64(len(frame) + 4))
	corr, resp, err := protocol.ParseResponse(frame, req)
	if err != nil && req.Key() == protocol.ApiVersionsKey {
		// A peer that does not know our ApiVersions version answers at v0.
		v0 := kmsg.NewPtrApiVersionsRequest()
		v0.SetVersion(0)
		corr, resp, err = protocol.ParseResponse(frame, v0)
	}
	if err != nil {
		return nil, err
	}
	if corr != conn.corr {
		return nil, fmt.Errorf("peer: response correlation id %d, want %d", corr, conn.corr)
	}
	return resp, nil
}

// Pending is the number of requests queued or in flight to all peers.
func (p *Client) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, pr := range p.peers {
		n += len(pr.queue) + int(pr.busy.Load())
	}
	return n
}

// login authenticates conn to peer pr with SaslHandshake v1 and
// SaslAuthenticate; a failure is logged once per distinct reason.
func (p *Client) login(pr *peer, conn *peerConn) error {
	p.mu.Lock()
	c := p.sasl
	p.mu.Unlock()
	if c == nil {
		return nil
	}
	again := !conn.reauthAt.IsZero()
	lifetime, err := p.saslExchange(pr, conn, c)
	if err != nil {
		if msg := err.Error(); msg != pr.lastSASLFailure {
			pr.lastSASLFailure = msg
			p.log.Warn().Int32("peer", pr.id).Str("addr", pr.addr).Str("mechanism", c.Name()).Str("reason", msg).
				Msg("SASL authentication with peer failed; closing connection")
		}
		return fmt.Errorf("peer: SASL with node %d: %w", pr.id, err)
	}
	pr.lastSASLFailure = ""
	conn.setSessionLifetime(time.Now(), lifetime)
	if again {
		p.log.Info().Int32("peer", pr.id).Str("mechanism", c.Name()).Dur("session_lifetime_ms", lifetime).Msg("re-authenticated with peer")
	}
	return nil
}

// saslExchange authenticates conn and returns the session lifetime the
// peer granted (SaslAuthenticate's SessionLifetimeMs; 0 for none).
func (p *Client) saslExchange(pr *peer, conn *peerConn, m sasl.Mechanism) (time.Duration, error) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	resp, err := p.roundTrip(pr, conn, hs)
	if err != nil {
		return 0, err
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return 0, fmt.Errorf("the peer refused mechanism %s (%v; it enables %v)", m.Name(), kerr.ErrorForCode(code), resp.(*kmsg.SASLHandshakeResponse).SupportedMechanisms)
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	session, token, err := m.Authenticate(ctx, pr.addr)
	if err != nil {
		return 0, err
	}
	for {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = token
		r, err := p.roundTrip(pr, conn, auth)
		if err != nil {
			return 0, err
		}
		ar := r.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			// The peer's message names no credential (Apache's and
			// kraftd's say only that the credentials were wrong).
			msg := ""
			if ar.ErrorMessage != nil {
				msg = ": " + *ar.ErrorMessage
			}
			return 0, fmt.Errorf("%v%s", kerr.ErrorForCode(ar.ErrorCode), msg)
		}
		done, next, err := session.Challenge(ar.SASLAuthBytes)
		if err != nil {
			return 0, fmt.Errorf("the peer's SASL answer does not verify: %v", err)
		}
		if done {
			return time.Duration(ar.SessionLifetimeMillis) * time.Millisecond, nil
		}
		token = next
	}
}
