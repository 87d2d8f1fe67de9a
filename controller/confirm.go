package controller

import "github.com/kraftd/kraftd/metadata"

// A leader that a partition has cut off keeps its image, and until it
// learns of the next epoch it would answer from that image: a refusal such
// as UNKNOWN_TOPIC_OR_PARTITION for a topic the new leader has already
// created, or a heartbeat answer the new leader would not give. So an
// operation that writes nothing is answered only once a write handed to
// the log after it was built has committed. That commit needs a majority
// to fetch the write in this epoch, and a voter that has voted for a later
// epoch never fetches in this one again; so when it commits, no later
// leader had been elected when the operation was built, and its answer is
// one the committed history allowed then. Apache answers such operations
// from the image at once, and a deposed leader may do so until check-quorum
// removes it. Broker heartbeats and the core's timed work keep Apache's
// rule (execFromImage): a steady fleet's heartbeats would otherwise cost a
// commit every few of them.
//
// The write is the next one any operation makes, or, when none comes, a
// NoOp: at most one is in flight, and every answer that waits while it is
// flies on the one after it, so a flood of heartbeats costs one NoOp per
// commit, not one each.

// confirmations are the answers waiting for a write made after them.
type confirmations struct {
	// next are answers of operations built after the latest write was
	// handed to the log: the next write, or NoOp, confirms them.
	next []heldAnswer
	// noop is the NoOp in flight, nil if none.
	noop *pendingWrite
}

// heldAnswer is an operation that wrote nothing, and what it will answer.
type heldAnswer struct {
	op     *operation
	result error
}

// confirmThenAnswer answers op, which wrote nothing and found result, once
// a write made after now commits.
func (c *Core) confirmThenAnswer(op *operation, result error) {
	c.confirming.next = append(c.confirming.next, heldAnswer{op, result})
	if c.confirming.noop == nil {
		c.proposeConfirmation()
	}
}

// confirmBy makes w, just handed to the log, the write that answers every
// operation built since the previous one.
func (c *Core) confirmBy(w *pendingWrite) {
	held := c.confirming.next
	if len(held) == 0 {
		return
	}
	c.confirming.next = nil
	w.waiters = append(w.waiters, func(w *pendingWrite) {
		for _, h := range held {
			if w.err != nil {
				// Not a failure of the operation: of this node's claim to lead.
				c.answer(h.op, nothingWritten, ErrNotController)
				continue
			}
			c.answer(h.op, written{-1, w.last()}, h.result)
		}
	})
}

// proposeConfirmation hands a NoOp to the log for the answers waiting in
// next, and, once it settles, another for those that came meanwhile.
func (c *Core) proposeConfirmation() {
	w := c.pipe.add(1)
	c.confirming.noop = w
	c.confirmBy(w)
	w.waiters = append(w.waiters, func(*pendingWrite) {
		c.confirming.noop = nil
		if len(c.confirming.next) > 0 {
			c.proposeConfirmation()
		}
	})
	done := func(first int64, err error) { c.done(w, first, err); c.drive() }
	if err := c.log.Propose(c.readyEpoch, []metadata.Record{&metadata.NoOpRecord{}}, nil, done); err != nil {
		c.pipe.refuse(w, err) // nothing reached the log; the image is as it was
	}
}
