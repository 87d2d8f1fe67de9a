// limits.go holds the node-wide bounds on what clients may take: open
// connections (in total and from one address) and one memory budget
// (queued.max.request.bytes) for what all connections together hold:
// requests being read, decoded and handled, and answers not yet written.
// The per-connection bounds live in responder.go.

package server

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
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
// the memory budget. The requests a quorum lives on (Fetch, Vote,
// BeginQuorumEpoch, broker heartbeats) are a few hundred bytes, so clients
// that fill the budget, send huge frames or announce one and then stall
// cannot hold them up. Their charge still counts, and a connection reads
// no further frame until its request is admitted (responder.add), so each
// connection overdraws the budget by at most one such frame's charge.
const smallFrame = 8 << 10

// decodeFactor is what a frame is charged against the budget for each of
// its bytes, from its size prefix until its answer is built: the request
// kmsg decodes from it can take more memory than the frame, most for long
// lists of near-empty elements. Measured on the requests kraftd serves
// (BenchmarkDecodeAmplification), the worst are ElectLeaders at 16x and
// the config requests at 14x; Fetch is 2x.
const decodeFactor = 20

// smallRequestMax is the largest frame kraftd reads for a request that
// carries no list of topics, partitions or resources: a vote, a fetch of
// the metadata log, a broker's registration or heartbeat is a few hundred
// bytes. A larger one is refused before its body is read, so only the bulk
// requests may take socket.request.max.bytes.
const smallRequestMax = 1 << 20

// minMemoryBudget is the least queued.max.request.bytes may be: room for
// the charge of the largest request that is not a bulk request.
const minMemoryBudget = smallRequestMax * decodeFactor

// bulkRequests are the keys whose requests may be as large as
// socket.request.max.bytes: admin requests (alone or inside an Envelope)
// and a broker's AlterPartition or AssignReplicasToDirs, which list as
// many partitions as the broker holds.
var bulkRequests = map[int16]bool{
	19: true, // CreateTopics
	20: true, // DeleteTopics
	32: true, // DescribeConfigs
	33: true, // AlterConfigs
	37: true, // CreatePartitions
	43: true, // ElectLeaders
	44: true, // IncrementalAlterConfigs
	45: true, // AlterPartitionReassignments
	46: true, // ListPartitionReassignments
	56: true, // AlterPartition
	58: true, // Envelope
	73: true, // AssignReplicasToDirs
}

// frameTooLarge refuses a frame over smallRequestMax for a key that is
// not a bulk request.
type frameTooLarge struct {
	key  int16
	size int32
}

func (e *frameTooLarge) Error() string {
	return fmt.Sprintf("frame of %d bytes for %s (key %d) exceeds the %d bytes kraftd reads for a request without topic or partition lists",
		e.size, kmsg.NameForKey(e.key), e.key, smallRequestMax)
}

// frameOverBudget refuses a frame whose charge is more than the whole
// memory budget: decoding it could take more than the node may hold.
type frameOverBudget struct {
	key   int16
	size  int32
	limit int64
}

func (e *frameOverBudget) Error() string {
	return fmt.Sprintf("frame of %d bytes for %s (key %d) may decode into up to %d bytes, more than queued.max.request.bytes (%d) lets the node hold; "+
		"send smaller requests, or raise queued.max.request.bytes to %d times the largest",
		e.size, kmsg.NameForKey(e.key), e.key, decodeCharge(int(e.size)), e.limit, decodeFactor)
}

// decodeCharge is what a frame of n bytes holds of the budget.
func decodeCharge(n int) int64 { return int64(n) * decodeFactor }

// memBudget is queued.max.request.bytes: one node-wide bound on the bytes
// all connections together hold. A frame is charged decodeCharge from the
// moment its size prefix is read until its request's answer is built; a
// Fetch or FetchSnapshot reserves the answer it may get before it runs;
// a built answer holds its size until the kernel has taken it. A frame or
// reserve that does not fit waits, and with it the reading of its
// connection (backpressure); the exceptions, small frames and one request
// of a connection that owes nothing, are what keeps the quorum's own
// traffic moving while clients hold the budget (see responder.add).
type memBudget struct {
	limit int64 // -1: unbounded

	mu   sync.Mutex
	held int64
	peak int64 // the most ever held at once, for tests
	// changed is closed when held goes down, made only once a take has
	// to wait (nil until then): most gives have no waiter, and a channel
	// made for each of them was garbage on every request.
	changed chan struct{}
}

func newMemBudget(limit int64) *memBudget {
	return &memBudget{limit: limit}
}

// fitsLocked reports whether n more bytes fit; b.mu is held.
func (b *memBudget) fitsLocked(n int64) bool {
	return b.limit < 0 || b.held+n <= b.limit
}

// tryTake takes n bytes if they fit (n = 0 fits while the budget is not
// over its limit), or if overdraw is set; else it returns, with nothing
// taken, a channel closed when bytes are given back.
func (b *memBudget) tryTake(n int64, overdraw bool) (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !overdraw && !b.fitsLocked(n) {
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		return false, b.changed
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	return true, nil
}

// give returns n bytes taken by tryTake (n may be negative: an answer
// built larger than its reserve takes the difference, unconditionally).
func (b *memBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	if n > 0 {
		if b.changed != nil {
			close(b.changed)
			b.changed = nil
		}
	} else {
		b.peak = max(b.peak, b.held)
	}
}

// acquire takes the charge of a frame of n bytes, waiting while it does
// not fit unless the frame is small. It returns false, having taken
// nothing, once ctx is done. The caller has refused frames whose charge is
// over the limit, which could never fit.
func (b *memBudget) acquire(ctx context.Context, frame int) bool {
	for {
		ok, changed := b.tryTake(decodeCharge(frame), frame <= smallFrame)
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// release gives back the charge of a frame of n bytes.
func (b *memBudget) release(frame int) { b.give(decodeCharge(frame)) }

// overLimit reports whether a frame of n bytes could never fit.
func (b *memBudget) overLimit(frame int32) bool {
	return b.limit >= 0 && decodeCharge(int(frame)) > b.limit
}

// peakHeld is the most the budget ever held at once.
func (b *memBudget) peakHeld() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// heldNow is what the budget holds now.
func (b *memBudget) heldNow() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}
