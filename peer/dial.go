package peer

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// A peer whose host name did not resolve is dialed again only after a
// backoff that doubles from lookupBackoffMin to lookupBackoffMax (Apache's
// reconnect.backoff.ms and reconnect.backoff.max.ms), so a name missing
// from DNS is not asked for every retry.backoff.ms. Other failures keep no
// backoff here: a refused connection to a leader that died must be
// noticed at once (quorum.ErrPeerGone).
const (
	lookupBackoffMin = 50 * time.Millisecond
	lookupBackoffMax = time.Second
)

// peerLookup is one peer's name-resolution state, owned by its goroutine
// (run) but for failure, which others read.
type peerLookup struct {
	failedAt time.Time
	backoff  time.Duration
	err      error
	// failure is the last lookup failure's text while the name does not
	// resolve; nil once it does.
	failure atomic.Pointer[string]
}

// dial connects to pr's address, looking its host name up anew each time
// (a controller's address may move: a pod rescheduled, a DNS record
// changed), never from an address an earlier attempt resolved. A failed
// lookup fails the attempts of its backoff at once with the same error,
// and is logged once per distinct reason; the peer's goroutine never
// waits longer than the dial timeout, so one name that does not resolve
// holds up no other peer.
func (p *Client) dial(pr *peer) (net.Conn, error) {
	l := &pr.lookup
	if l.err != nil && time.Since(l.failedAt) < l.backoff {
		return nil, l.err
	}
	d := net.Dialer{Timeout: p.timeout, Resolver: p.resolver}
	c, err := d.Dial("tcp", pr.addr)
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		l.failedAt, l.err = time.Now(), err
		l.backoff = min(max(2*l.backoff, lookupBackoffMin), lookupBackoffMax)
		msg := dnsErr.Error()
		if prev := l.failure.Swap(&msg); prev == nil || *prev != msg {
			p.log.Warn().Int32("peer", pr.id).Str("addr", pr.addr).Str("reason", msg).
				Msg("the peer's host name does not resolve; asking again with backoff")
		}
		return nil, err
	}
	if l.failure.Swap(nil) != nil {
		p.log.Info().Int32("peer", pr.id).Str("addr", pr.addr).Msg("the peer's host name resolves again")
	}
	l.err, l.backoff = nil, 0
	return c, err
}

// Unresolved lists the peers whose host name did not resolve at the last
// attempt, with the reason.
func (p *Client) Unresolved() map[int32]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out map[int32]string
	for id, pr := range p.peers {
		if f := pr.lookup.failure.Load(); f != nil {
			if out == nil {
				out = map[int32]string{}
			}
			out[id] = *f
		}
	}
	return out
}
