package controller

import (
	"context"
	"sync"

	"github.com/kraftd/kraftd/metadata"
)

// pipeline tracks the writes the active controller has handed to the quorum
// and that have not yet been answered. It has its own lock, not op's: the
// quorum settles writes from its own goroutines while an operation that
// holds op may be waiting for them.
type pipeline struct {
	mu sync.Mutex
	// writes are in the order they were handed over, which is their order
	// in the log.
	writes []*pendingWrite
	// failures counts writes that failed, ever. A failed write's records
	// are in the speculative image but not in the log, so the image must be
	// rebuilt once a failure shows here.
	failures uint64
}

// pendingWrite is one operation's records on their way to commit.
type pendingWrite struct {
	count int
	// settled is closed when the quorum has reported on this write;
	// answered is closed once this write and every earlier one have
	// settled, so operations are answered in log order.
	settled, answered chan struct{}
	// Set before settled is closed.
	first int64 // offset of the first record, -1 when never written
	err   error
}

func (p *pipeline) add(count int) *pendingWrite {
	w := &pendingWrite{count: count, settled: make(chan struct{}), answered: make(chan struct{}), first: -1}
	p.mu.Lock()
	p.writes = append(p.writes, w)
	p.mu.Unlock()
	return w
}

// settle records the quorum's report on w and answers every write whose
// predecessors have all settled.
func (p *pipeline) settle(w *pendingWrite, first int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.first, w.err = first, err
	if err != nil {
		p.failures++
	}
	close(w.settled)
	i := 0
	for ; i < len(p.writes); i++ {
		select {
		case <-p.writes[i].settled:
			close(p.writes[i].answered)
			continue
		default:
		}
		break
	}
	clear(p.writes[:i])
	p.writes = p.writes[i:]
}

// latest returns the last write not yet answered (nil if none) and the
// failure count.
func (p *pipeline) latest() (*pendingWrite, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.writes) == 0 {
		return nil, p.failures
	}
	return p.writes[len(p.writes)-1], p.failures
}

// drain waits until every write handed over has been answered. Called with
// op held, so no write is added meanwhile.
func (p *pipeline) drain(ctx context.Context) error {
	for {
		w, _ := p.latest()
		if w == nil {
			return nil
		}
		select {
		case <-w.answered:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// wait waits until w is answered and returns its outcome.
func (w *pendingWrite) wait(ctx context.Context) error {
	select {
	case <-w.answered:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *pendingWrite) last() int64 { return w.first + int64(w.count) - 1 }

// offsetRange is the offsets [first, end) of one write.
type offsetRange struct{ first, end int64 }

// noteOwnWrite records, at the moment the log takes them, where the active
// side's own records go, so that Replay can tell them from anyone else's.
func (c *Controller) noteOwnWrite(first int64, count int) {
	c.mu.Lock()
	c.ownWrites = append(c.ownWrites, offsetRange{first, first + int64(count)})
	c.mu.Unlock()
}

// noteReplayed checks a replayed record against the active side's own
// writes: anything else that changes the image (a record some other writer
// put in the log on this leader, or a record the image rejected) means the
// speculative image no longer is the committed one plus the pending
// writes. Called with mu held.
func (c *Controller) noteReplayed(offset int64, rec metadata.Record, applyErr error) {
	for len(c.ownWrites) > 0 && c.ownWrites[0].end <= offset {
		c.ownWrites = c.ownWrites[1:]
	}
	own := len(c.ownWrites) > 0 && c.ownWrites[0].first <= offset
	if _, noOp := rec.(*metadata.NoOpRecord); applyErr != nil || (!own && !noOp) {
		c.diverged.Store(true)
	}
}
