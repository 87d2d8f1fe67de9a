// responder.go writes a connection's responses in request order and bounds
// what one connection may hold: requests in flight, and bytes of responses
// not yet taken by the client, which also count against the node-wide
// memory budget (limits.go). When a bound is reached, the connection's
// reader stops reading until the client drains its responses or the
// budget has room; a client that never reads stops being read, and costs
// no more.

package server

import (
	"bufio"
	"context"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// maxOwedPerConn bounds the bytes of responses one connection may be
	// owed: reserved for its requests in flight, then held until written.
	// Four full Fetch responses fit, more than any KRaft client pipelines.
	maxOwedPerConn = 4 * fetchReserve
	// fetchReserve is what a Fetch or FetchSnapshot in flight reserves:
	// the most records the quorum puts in one answer (quorum.Config's
	// MaxFetchBytes, which node.Config leaves at its 8 MiB default). It is
	// reserved before the request runs because those answers are far
	// larger than their requests; the actual size replaces it at the end.
	fetchReserve = 8 << 20
	// writeChunk is how much is written under one write deadline, so the
	// deadline measures a client's progress, not the size of a response.
	writeChunk = 256 << 10
	// answerCopies is how many times the memory budget counts a reserve
	// while its request runs: a Fetch's records are read into memory and
	// then copied into the answer's frame, and both live until the frame
	// is built.
	answerCopies = 2
	// overdraftReserve is what a Fetch or FetchSnapshot reserves, and asks
	// for (shrinkAnswer), when it runs over a full memory budget: a
	// connection that owes nothing may run one request so (responder.add),
	// so a follower catching up keeps fetching, in smaller answers, while
	// clients hold the budget. Each connection overdraws at most this.
	overdraftReserve = 128 << 10
)

// responseReserve is what a request reserves of its connection's owed
// bytes before it runs. Other answers are about as large as their requests
// (or small), so they are counted only once built.
func responseReserve(req kmsg.Request) int64 {
	var asked int32
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		asked = r.MaxBytes
	case *kmsg.FetchSnapshotRequest:
		asked = r.MaxBytes
	default:
		return 0
	}
	if asked > 0 && asked < fetchReserve {
		return int64(asked)
	}
	return fetchReserve
}

// shrinkAnswer lowers what a Fetch or FetchSnapshot asks for to the
// reserve it was admitted with, when add cut it.
func shrinkAnswer(req kmsg.Request, reserve int64) {
	if reserve >= responseReserve(req) {
		return
	}
	n := int32(max(reserve, 1))
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		r.MaxBytes = n
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if pm := &r.Topics[i].Partitions[j].PartitionMaxBytes; *pm <= 0 || *pm > n {
					*pm = n
				}
			}
		}
	case *kmsg.FetchSnapshotRequest:
		r.MaxBytes = n
	}
}

// pending is a response slot, queued in request order.
type pending struct {
	reserve  int64 // owed bytes reserved when admitted, until finished
	charge   int64 // the request frame's decode charge, held until finished
	frame    []byte
	recycled *[]byte    // frame's buffer, from answerFrames, if it came from there
	tail     *chunkTail // written after frame, if not nil
	close    bool       // close the connection instead of answering
	finished bool       // set under responder.mu
}

// responder writes a connection's responses in request order. Whichever
// handler finishes the oldest outstanding request writes it, and every
// finished response queued behind it, itself: no writer goroutine has to
// wake up between a handler and the socket.
type responder struct {
	conn         net.Conn
	cancel       context.CancelFunc
	budget       *memBudget // node-wide: reserves, charges and frames not yet written
	maxInFlight  int
	maxOwed      int64
	writeTimeout time.Duration

	writeMu sync.Mutex // held while popping and writing, so writes keep queue order
	w       *bufio.Writer
	ready   []*pending // finish's list of answers to write, kept for the next; under writeMu
	mu      sync.Mutex // never held while writing: the reader only needs this one
	// space is closed when in-flight or owed goes down, or the connection
	// dies; a channel, so add can wait on the budget beside it. It is made
	// only when an add has to wait (nil until then): a channel made at
	// every answer was garbage on every request.
	space chan struct{}
	queue []*pending
	// inFlight counts requests admitted and not yet written; owed is
	// their reserves plus the frames built and not yet written.
	inFlight int
	owed     int64
	peakOwed int64 // the most ever owed at once, for tests
	dead     bool
	// lastAnswer is when an answer was last handed to the kernel: the
	// connection's idle time counts from then, not from its last request.
	lastAnswer time.Time
	pending    sync.WaitGroup
}

func newResponder(c net.Conn, cancel context.CancelFunc, budget *memBudget, maxInFlight int, writeTimeout time.Duration) *responder {
	return &responder{conn: c, cancel: cancel, budget: budget, maxInFlight: maxInFlight, maxOwed: maxOwedPerConn,
		writeTimeout: writeTimeout, w: bufio.NewWriterSize(deadlineWriter{c, writeTimeout}, connBuffer)}
}

// add queues p behind the requests already in flight, waiting while the
// connection has as many requests in flight as it may, or is owed so much
// that p's reserve does not fit (unless nothing is owed, so that a reserve
// above the bound still runs alone), or while the node's memory budget is
// over its limit or has no room for p's reserve. A connection that owes
// nothing is not made to wait for the budget: p runs at once, its reserve
// cut to overdraftReserve, so peers and clients that read their answers
// keep being served while hostile ones hold the budget; each connection
// overdraws it by at most one such request. False once the connection is
// closing.
func (r *responder) add(ctx context.Context, p *pending) bool {
	for {
		r.mu.Lock()
		if r.dead || ctx.Err() != nil {
			r.mu.Unlock()
			return false
		}
		var wait <-chan struct{}
		if !r.fits(p) {
			if r.space == nil {
				r.space = make(chan struct{})
			}
			wait = r.space
		} else {
			ok, changed := r.budget.tryTake(answerCopies*p.reserve, false)
			if !ok && r.inFlight == 0 && r.owed == 0 {
				p.reserve = min(p.reserve, overdraftReserve)
				ok, _ = r.budget.tryTake(answerCopies*p.reserve, true)
			}
			if ok {
				r.admit(p)
				r.mu.Unlock()
				return true
			}
			wait = changed
		}
		r.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
}

// admit queues p, whose reserve the budget has taken; r.mu is held.
func (r *responder) admit(p *pending) {
	r.inFlight++
	r.owed += p.reserve
	r.peakOwed = max(r.peakOwed, r.owed)
	r.pending.Add(1)
	r.queue = append(r.queue, p)
}

// wake tells a waiting add that space may have come; r.mu is held.
func (r *responder) wake() {
	if r.space != nil {
		close(r.space)
		r.space = nil
	}
}

// fits is add's condition to go ahead; r.mu is held.
func (r *responder) fits(p *pending) bool {
	if r.dead {
		return true // add refuses
	}
	return r.inFlight < r.maxInFlight && (r.owed == 0 || r.owed+p.reserve <= r.maxOwed)
}

// idleFor reports whether the connection has had no request in flight and
// no answer written for d: a client waiting for a parked answer is not
// idle, nor one that has just been answered (it had the whole interval to
// send its next request).
func (r *responder) idleFor(d time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inFlight == 0 && time.Since(r.lastAnswer) >= d
}

// finish marks p answered and writes what is ready at the head of the queue.
func (r *responder) finish(p *pending) {
	defer r.pending.Done()
	r.mu.Lock()
	p.finished = true
	r.owed += int64(len(p.frame)) - p.reserve
	// The request and its reserve are done with; the answer takes their
	// place in the budget until it is written.
	r.budget.give(answerCopies*p.reserve + p.charge - int64(len(p.frame)))
	p.reserve, p.charge = 0, 0
	r.peakOwed = max(r.peakOwed, r.owed)
	r.mu.Unlock()

	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.mu.Lock()
	ready := r.ready[:0]
	for len(r.queue) > 0 && r.queue[0].finished {
		ready = append(ready, r.queue[0])
		r.queue = r.queue[1:]
	}
	dead := r.dead
	r.mu.Unlock()
	if len(ready) == 0 {
		return
	}
	if !dead {
		r.write(ready)
	}
	// Only now, with the bytes handed to the kernel, is the space free:
	// a client that does not read keeps it taken.
	r.mu.Lock()
	r.inFlight -= len(ready)
	r.lastAnswer = time.Now()
	written := int64(0)
	for _, q := range ready {
		written += int64(len(q.frame))
		q.frame = nil
		recycleAnswerFrame(q.recycled)
		q.recycled = nil
		if q.tail != nil {
			q.tail.chunk.Close()
			q.tail = nil
		}
	}
	r.owed -= written
	r.budget.give(written)
	r.wake()
	r.mu.Unlock()
	clear(ready)
	r.ready = ready
}

// write writes ready in order; r.writeMu is held.
func (r *responder) write(ready []*pending) {
	for _, q := range ready {
		if q.close {
			r.w.Flush()
			r.kill()
			return
		}
		if _, err := r.w.Write(q.frame); err != nil {
			r.kill()
			return
		}
		if q.tail != nil && !r.writeTail(q.tail) {
			r.kill()
			return
		}
	}
	if r.w.Flush() != nil {
		r.kill()
	}
}

// writeTail writes a chunk answer's tail: what is buffered, the chunk
// straight to the connection, then the end of the encoding.
func (r *responder) writeTail(t *chunkTail) bool {
	if r.w.Flush() != nil || t.send(r.conn, r.writeTimeout) != nil {
		return false
	}
	_, err := r.w.Write(t.suffix)
	return err == nil
}

// kill closes the connection; later responses are dropped.
func (r *responder) kill() {
	r.mu.Lock()
	r.dead = true
	r.wake()
	r.mu.Unlock()
	r.cancel()
	r.conn.Close()
}

// peak is the most the connection was ever owed at once.
func (r *responder) peak() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peakOwed
}

// deadlineWriter writes to a connection in chunks, each under a fresh
// write deadline: a client that takes no bytes for the timeout
// (connections.max.idle.ms) loses its connection, so it cannot pin the
// handler that is writing to it.
type deadlineWriter struct {
	c       net.Conn
	timeout time.Duration
}

func (d deadlineWriter) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		d.c.SetWriteDeadline(time.Now().Add(d.timeout))
		m, err := d.c.Write(b[n:min(len(b), n+writeChunk)])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
