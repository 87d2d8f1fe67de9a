package controller

import (
	"errors"
	"fmt"
	"time"

	"github.com/kraftd/kraftd/metadata"
)

// Core is the active controller as a deterministic state machine. It
// takes only explicit inputs, as Apache's QuorumController takes events
// from its one queue: operations (each with the time it is given and a
// callback for its answer), Tick (with the time), SetQuorum (leadership,
// its epoch and kraft.version), and the log's notifications (stamp and
// done, see Log), the latter once the records have been replayed. Its
// outputs are proposals to the log and answers. It never blocks, starts no
// goroutine, reads no clock and no global randomness (placement draws
// from Settings.Rand, topic ids from Settings.TopicIDs), so a simulator can
// run it on one goroutine from one seed.
//
// Every method must be called from one goroutine, the one that replays
// committed records into ctl (the node's loop, through its controller
// seam, node/seam.go): the core reads the committed image, and that
// goroutine is the only one that writes it. Answers come from that
// goroutine too, in commit order, and must not block.
//
// What waits in a blocking design is queued work here: an operation that
// needs the epoch's catch-up barrier to commit, the pipeline to drain
// before the speculative image is rebuilt, or a registration to be given
// its offset, stays in the queue, and the queue moves on when the
// notification it waits for arrives.
type Core struct {
	ctl      *Controller // the committed side: image, replay offsets
	log      Log
	settings Settings
	// quorum is where the quorum stands, as the last SetQuorum said.
	quorum Quorum
	// now is the latest time any input was given: builds read it, so the
	// core's clock never runs backwards.
	now time.Time

	readyEpoch int32     // leader epoch whose catch-up barrier committed, -1 none
	sessions   *sessions // broker heartbeat sessions of readyEpoch
	// spec is the speculative image: the committed image plus the records
	// of every write handed to the log and not yet committed, in log
	// order. Operations validate against it. nil means it must be rebuilt
	// from the committed image once no write is pending.
	spec *metadata.Image
	// specFailures is pipe.failures when spec was last known good.
	specFailures uint64
	pipe         pipeline
	// barrier is the NoOp that starts barrierEpoch, until its operation
	// has seen it answered.
	barrier      *pendingWrite
	barrierEpoch int32
	// untaken is a write that carries its own offset and that the log has
	// not taken yet: nothing is built until it has its offset.
	untaken *pendingWrite
	// kraftUpgrade is set by the build of an operation whose records must
	// upgrade kraft.version on their way into the log (UpdateFeatures).
	kraftUpgrade *kraftUpgrade

	queue []*operation // operations not yet built, in arrival order
	// confirming holds the answers of operations that wrote nothing until
	// a write handed to the log after they were built commits (confirm.go).
	confirming confirmations
	answers    []func() // answers due, in order
	busy       bool     // drive is running (an answer may call back in)

	// placement caches the brokers new replicas may go to, for one image
	// at one broker generation (see candidates).
	placement struct {
		im  *metadata.Image
		gen uint64
		set *candidates
	}
	timed timedState
}

// operation is one request: build turns the speculative image into records
// (none for a read or a rejected request); finish answers it once they
// have committed (see exec).
type operation struct {
	build  func(im *metadata.Image) ([]metadata.Record, error)
	finish func(w written, err error)
	// fromImage is set for operations answered from the image without a
	// proof that this node still leads (execFromImage).
	fromImage bool
}

// written is where an operation's effects end in the log: first and last
// are the offsets of its own records, or, for an operation that wrote
// nothing, first is -1 and last is the end of the latest write it read
// (-1 when it read only committed records).
type written struct{ first, last int64 }

var nothingWritten = written{-1, -1}

// NewCore returns the active side of ctl, proposing through log; it does
// not lead until SetQuorum says so. s.TopicIDs must be set.
func NewCore(ctl *Controller, log Log, s Settings) *Core {
	s = s.withDefaults()
	if s.TopicIDs == nil {
		panic("controller: NewCore needs Settings.TopicIDs")
	}
	return &Core{ctl: ctl, log: log, settings: s, readyEpoch: -1, quorum: Quorum{KRaftVersion: s.KRaftVersion}}
}

// SetQuorum tells the core where the quorum stands: whether this node
// leads, in which epoch, and the quorum's kraft.version. A node that no
// longer leads lets go of its speculative image; queued operations then
// fail with ErrNotController, and those of a new leadership start with
// its barrier.
func (c *Core) SetQuorum(q Quorum) {
	if q == c.quorum {
		return
	}
	c.quorum = q
	if !q.Leader {
		c.dropSpec()
	}
	c.drive()
}

// Leading reports whether the core was last told that this node leads.
func (c *Core) Leading() bool { return c.quorum.Leader }

// observe advances the core's clock to now, never back.
func (c *Core) observe(now time.Time) {
	if now.After(c.now) {
		c.now = now
	}
}

// exec queues one operation. Operations are built one at a time, in
// arrival order, each against the speculative image, which holds the
// effects of every earlier operation whether committed or not; so many may
// be in flight, and each is answered once its records have committed, in
// log order. build must not keep references into the image. An operation
// that writes nothing may have read records not yet committed, so it is
// answered only once those have (as Apache does).
func (c *Core) exec(now time.Time, build func(im *metadata.Image) ([]metadata.Record, error), finish func(written, error)) {
	c.enqueue(now, &operation{build: build, finish: finish})
}

// execFromImage is exec for an operation whose answer, when it writes
// nothing, needs no proof that this node still leads (confirm.go): it is
// answered once the writes it read have committed, or at once, as Apache
// answers every such operation. That is the core's own timed work, whose
// answer never leaves the node, and a broker's heartbeat (see
// BrokerHeartbeat).
func (c *Core) execFromImage(now time.Time, build func(im *metadata.Image) ([]metadata.Record, error), finish func(written, error)) {
	c.enqueue(now, &operation{build: build, finish: finish, fromImage: true})
}

func (c *Core) enqueue(now time.Time, op *operation) {
	c.observe(now)
	c.queue = append(c.queue, op)
	c.drive()
}

// drive runs queued answers and operations until the queue waits for a
// notification. An answer that calls back into the core (the simulator
// may) only queues its input; the outermost drive runs it, so answers
// keep their order.
func (c *Core) drive() {
	if c.busy {
		return
	}
	c.busy = true
	for {
		if len(c.answers) > 0 {
			a := c.answers[0]
			c.answers[0] = nil
			c.answers = c.answers[1:]
			a()
			continue
		}
		if len(c.queue) == 0 || !c.step(c.queue[0]) {
			break
		}
		c.queue[0] = nil
		c.queue = c.queue[1:]
	}
	c.busy = false
}

// answer queues op's answer; drive delivers it.
func (c *Core) answer(op *operation, w written, err error) {
	c.answers = append(c.answers, func() { op.finish(w, err) })
}

// step builds the operation at the head of the queue, or reports false
// when it must wait for a notification.
func (c *Core) step(op *operation) bool {
	if c.untaken != nil {
		return false
	}
	wait, err := c.ready()
	if wait {
		return false
	}
	if err != nil {
		c.answer(op, nothingWritten, err)
		return true
	}
	c.kraftUpgrade = nil
	records, err := op.build(c.spec)
	upgrade := c.kraftUpgrade
	c.kraftUpgrade = nil
	if err == nil && len(records) > 0 {
		c.submit(op, records, upgrade)
		return true
	}
	if c.pipe.failures != c.specFailures {
		// What it read may include records that will never commit.
		c.spec = nil
		c.answer(op, nothingWritten, ErrNotController)
		return true
	}
	if !op.fromImage {
		c.confirmThenAnswer(op, err)
		return true
	}
	latest := c.pipe.latest()
	if latest == nil {
		c.answer(op, nothingWritten, err)
		return true
	}
	c.answerAfter(latest, op, err)
	return true
}

// answerAfter answers op, which wrote nothing, once w has settled: with
// result if w committed, else with w's failure.
func (c *Core) answerAfter(w *pendingWrite, op *operation, result error) {
	w.waiters = append(w.waiters, func(w *pendingWrite) {
		if w.err != nil {
			c.answer(op, nothingWritten, w.err)
			return
		}
		c.answer(op, written{-1, w.last()}, result)
	})
}

// submit applies an operation's records to the speculative image and
// hands them to the log; building one operation at a time keeps the order
// of the image and of the log the same.
func (c *Core) submit(op *operation, records []metadata.Record, upgrade *kraftUpgrade) {
	if c.pipe.failures != c.specFailures {
		// An earlier write failed after this operation was built; the log
		// would refuse this one too.
		c.spec = nil
		c.answer(op, nothingWritten, ErrNotController)
		return
	}
	stamped := needsOffset(records)
	if !stamped {
		if _, err := c.spec.ApplyAll(records); err != nil {
			c.spec = nil
			c.answer(op, nothingWritten, fmt.Errorf("controller: the records of an operation do not apply: %w", err))
			return
		}
	}
	w := c.pipe.add(len(records))
	w.waiters = append(w.waiters, func(w *pendingWrite) {
		if w.err != nil {
			c.answer(op, nothingWritten, w.err)
			return
		}
		c.answer(op, written{w.first, w.last()}, nil)
	})
	var stamp func(int64)
	if stamped {
		// Records that carry their own offset reach the speculative image
		// only once the log has given them one; the next operation waits
		// for that, which costs one pass of the node loop, and only
		// registrations of a new broker incarnation need it.
		w.records, c.untaken = records, w
		stamp = func(first int64) { c.taken(w, first); c.drive() }
	}
	done := func(first int64, err error) { c.done(w, first, err); c.drive() }
	var err error
	if upgrade != nil {
		err = c.log.ProposeKRaftUpgrade(c.readyEpoch, upgrade.version, upgrade.validateOnly, records, done)
	} else {
		err = c.log.Propose(c.readyEpoch, records, stamp, done)
	}
	if err != nil {
		// Never handed over: the log will not hold what the speculative
		// image does.
		c.spec = nil
		c.done(w, -1, err)
		return
	}
	if upgrade == nil { // a refused upgrade writes nothing, so proves nothing
		c.confirmBy(w)
	}
}

// taken is the log's notice that w, which carries its own offset, has
// been given first.
func (c *Core) taken(w *pendingWrite, first int64) {
	if c.untaken != w {
		return
	}
	c.untaken = nil
	stampOffsets(w.records, first)
	if c.spec != nil {
		if _, err := c.spec.ApplyAll(w.records); err != nil {
			c.spec = nil
		}
	}
}

// done is the log's report on w: committed (and replayed) or failed.
func (c *Core) done(w *pendingWrite, first int64, err error) {
	if c.untaken == w {
		if err != nil {
			c.untaken = nil // refused: the failure count makes the next operation rebuild
		} else {
			c.taken(w, first) // a log that skipped stamp; be safe
		}
	}
	if err == nil && first >= 0 {
		c.ctl.ownWriteCommitted(first, first+int64(w.count))
	}
	var refused *KRaftRefusal
	if errors.As(err, &refused) {
		// Nothing reached the log, and nothing after it needs to be
		// rebuilt: the records held only a NoOp.
		c.pipe.refuse(w, err)
		return
	}
	c.pipe.settle(w, first, err)
}

// answerResp answers resp, or only err when the operation failed as a
// whole.
func answerResp[T any](answer func(T, error), resp T, err error) {
	if err != nil {
		var zero T
		answer(zero, err)
		return
	}
	answer(resp, nil)
}
