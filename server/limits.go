// limits.go holds the node-wide bounds on what clients may take: open
// connections (in total and from one address) and bytes of request frames
// being read and decoded. The per-connection bounds live in responder.go.

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
// the decode budget. The requests a quorum lives on (Fetch, Vote,
// BeginQuorumEpoch, broker heartbeats) are far smaller, so clients that
// send huge frames, or announce one and then stall, cannot hold them up.
// Their bytes still count, so the budget can be overdrawn by at most this
// much per connection.
const smallFrame = 64 << 10

// decodeFactor is what a frame is charged against the decode budget for
// each of its bytes: the request kmsg decodes from it can take more memory
// than the frame, most for long lists of near-empty elements. Measured on
// the requests kraftd serves (BenchmarkDecodeAmplification), the worst are
// ElectLeaders at 16x and the config requests at 14x; Fetch is 2x.
const decodeFactor = 20

// smallRequestMax is the largest frame kraftd reads for a request that
// carries no list of topics, partitions or resources: a vote, a fetch of
// the metadata log, a broker's registration or heartbeat is a few hundred
// bytes. A larger one is refused before its body is read, so only the bulk
// requests may take socket.request.max.bytes.
const smallRequestMax = 1 << 20

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

// decodeCharge is what a frame of n bytes holds of the decode budget.
func decodeCharge(n int) int64 { return int64(n) * decodeFactor }

// decodeBudget bounds the memory of requests being read and decoded
// (queued.max.request.bytes), each frame charged decodeCharge from the
// moment its size prefix is read until its body is decoded. A frame whose
// charge does not fit waits; one is let through when nothing else is held,
// so the largest frame still makes progress, alone.
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

// acquire takes the charge of a frame of n bytes, waiting while it does
// not fit. It returns false, having taken nothing, once ctx is done.
func (b *decodeBudget) acquire(ctx context.Context, frame int) bool {
	n := decodeCharge(frame)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit >= 0 && frame > smallFrame && b.held > 0 && b.held+n > b.limit {
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

// release gives back the charge of a frame of n bytes.
func (b *decodeBudget) release(frame int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= decodeCharge(frame)
	b.cond.Broadcast()
}

// peakHeld is the most the budget ever held at once.
func (b *decodeBudget) peakHeld() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
