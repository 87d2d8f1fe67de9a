package controller

import (
	"github.com/kraftd/kraftd/metadata"
)

// pipeline tracks the writes the core has handed to the log and that have
// not yet been answered. It belongs to the core's loop and has no lock.
type pipeline struct {
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
	// records are kept only for a write that carries its own offset: they
	// reach the speculative image once the log has given them one.
	records []metadata.Record
	// settled is set when the log has reported on this write; answered once
	// this write and every earlier one have settled, when waiters run, so
	// operations are answered in log order.
	settled, answered bool
	first             int64 // offset of the first record, -1 when never written
	err               error
	waiters           []func(*pendingWrite)
}

func (p *pipeline) add(count int) *pendingWrite {
	w := &pendingWrite{count: count, first: -1}
	p.writes = append(p.writes, w)
	return w
}

// settle records the log's report on w and answers every write whose
// predecessors have all settled.
func (p *pipeline) settle(w *pendingWrite, first int64, err error) {
	if w.settled {
		return
	}
	if err != nil {
		p.failures++
	}
	p.answerSettled(w, first, err)
}

// refuse settles w as written nowhere with err, without counting a
// failure: for a write the log refused whole that the speculative image
// may keep (its records changed nothing).
func (p *pipeline) refuse(w *pendingWrite, err error) {
	if !w.settled {
		p.answerSettled(w, -1, err)
	}
}

func (p *pipeline) answerSettled(w *pendingWrite, first int64, err error) {
	w.settled, w.first, w.err = true, first, err
	for len(p.writes) > 0 && p.writes[0].settled {
		head := p.writes[0]
		p.writes[0] = nil
		p.writes = p.writes[1:]
		head.answered = true
		for _, f := range head.waiters {
			f(head)
		}
		head.waiters = nil
	}
}

// latest returns the last write not yet answered, nil if none.
func (p *pipeline) latest() *pendingWrite {
	if len(p.writes) == 0 {
		return nil
	}
	return p.writes[len(p.writes)-1]
}

func (p *pipeline) empty() bool { return len(p.writes) == 0 }

func (w *pendingWrite) last() int64 { return w.first + int64(w.count) - 1 }

// offsetRange is the offsets [first, end).
type offsetRange struct{ first, end int64 }

// The committed side's share of telling the core's own records from anyone
// else's. While the core keeps a speculative image, Replay notes each run
// of records that change the image (unchecked); each of the core's writes,
// once committed, crosses off its own offsets, which it learns from done.
// A record left over below a committed write, or at all once nothing is
// pending, came from another writer (the node's activation, a test), and
// so does a record the image rejects or a snapshot: the speculative image
// is then no longer the committed one plus the pending writes. Checking at
// commit rather than when the log takes the records keeps the node loop
// from calling into the core for every proposal.

// maxUnchecked bounds the runs Replay keeps: past it the image is rebuilt
// anyway, so a node that replays long without its core noticing it lost
// the leadership holds no more.
const maxUnchecked = 4096

// noteReplayed is called by Replay with mu held.
func (c *Controller) noteReplayed(offset int64, rec metadata.Record, applyErr error) {
	if c.diverged {
		return
	}
	if applyErr != nil || len(c.unchecked) >= maxUnchecked {
		c.diverged, c.unchecked = true, nil
		return
	}
	if _, noOp := rec.(*metadata.NoOpRecord); noOp {
		return
	}
	if n := len(c.unchecked); n > 0 && c.unchecked[n-1].end == offset {
		c.unchecked[n-1].end++
		return
	}
	c.unchecked = append(c.unchecked, offsetRange{offset, offset + 1})
}

// ownWriteCommitted crosses off the offsets [first, end) of one of the
// core's writes, committed and replayed.
func (c *Controller) ownWriteCommitted(first, end int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.unchecked) > 0 && c.unchecked[0].first < end {
		r := &c.unchecked[0]
		if r.first < first {
			c.diverged = true // not ours: below this write, after the one before
		}
		if r.end > end {
			r.first = end
			break
		}
		c.unchecked = c.unchecked[1:]
	}
}

// foreignWrites reports whether the committed log holds records the
// speculative image lacks; idle says the core has no write pending, so
// that any record not yet crossed off is someone else's.
func (c *Controller) foreignWrites(idle bool) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.diverged || (idle && len(c.unchecked) > 0)
}

// speculate returns a copy of the committed image for the core to build a
// speculative image on, and starts watching for foreign records after it.
func (c *Controller) speculate() *metadata.Image {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchOwn, c.unchecked, c.diverged = true, nil, false
	return c.image.Clone()
}

// stopSpeculating stops the watch on a node that no longer leads.
func (c *Controller) stopSpeculating() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchOwn, c.unchecked, c.diverged = false, nil, false
}
