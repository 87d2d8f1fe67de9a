// limits.go holds the node-wide bounds on what clients may take: open
// connections (in total and from one address) and bytes of request frames
// being read and decoded. The per-connection bounds live in responder.go.

package server

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// connLimits counts open connections for max.connections and
// max.connections.per.ip.
type connLimits struct {
	max, maxPerIP int

	mu    sync.Mutex
	total int
	perIP map[string]int
}

func newConnLimits(max, maxPerIP int) *connLimits {
	return &connLimits{max: max, maxPerIP: maxPerIP, perIP: map[string]int{}}
}

// open counts a new connection from remote. It returns the function that
// uncounts it, or a reason the connection is one too many.
func (l *connLimits) open(remote net.Addr) (release func(), refused string) {
	ip := remote.String()
	if tcp, ok := remote.(*net.TCPAddr); ok {
		ip = tcp.IP.String()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max {
		return nil, fmt.Sprintf("%d connections are open, max.connections is %d", l.total, l.max)
	}
	if l.perIP[ip] >= l.maxPerIP {
		return nil, fmt.Sprintf("%d connections from %s are open, max.connections.per.ip is %d", l.perIP[ip], ip, l.maxPerIP)
	}
	l.total++
	l.perIP[ip]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.total--
		if l.perIP[ip]--; l.perIP[ip] == 0 {
			delete(l.perIP, ip)
		}
	}, ""
}

// smallFrame is the size up to which a frame is read without waiting for
// the decode budget. The requests a quorum lives on (Fetch, Vote,
// BeginQuorumEpoch, broker heartbeats) are far smaller, so clients that
// send huge frames, or announce one and then stall, cannot hold them up.
// Their bytes still count, so the budget can be overdrawn by at most this
// much per connection.
const smallFrame = 64 << 10

// decodeBudget bounds the bytes of request frames held from the moment
// their size prefix is read until their bodies are decoded
// (queued.max.request.bytes). A frame larger than what is left waits; one
// is let through when nothing else is held, so a limit below the largest
// frame would still make progress (config validation forbids it anyway).
type decodeBudget struct {
	limit int64 // -1: unbounded

	mu   sync.Mutex
	cond *sync.Cond
	held int64
	peak int64 // the most ever held at once, for tests
}

func newDecodeBudget(limit int64) *decodeBudget {
	b := &decodeBudget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire takes n bytes, waiting while they do not fit. It returns false,
// having taken nothing, once ctx is done.
func (b *decodeBudget) acquire(ctx context.Context, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit >= 0 && n > smallFrame && b.held > 0 && b.held+n > b.limit {
		// The waiter is woken by release, or by ctx through this
		// broadcast; sync.Cond has no other way to wait on a context.
		stop := context.AfterFunc(ctx, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.cond.Broadcast()
		})
		defer stop()
		for b.held > 0 && b.held+n > b.limit {
			if ctx.Err() != nil {
				return false
			}
			b.cond.Wait()
		}
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	return true
}

func (b *decodeBudget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	b.cond.Broadcast()
}

// peakHeld is the most the budget ever held at once.
func (b *decodeBudget) peakHeld() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
