package controller

import (
	"fmt"
	"strings"

	"github.com/kraftd/kraftd/metadata"
)

// txLog is the transcript's Log: Propose only records a write; the script decides when the log takes it (gives it its offsets,
// the stamp), when it commits (replayed into the committed image, then
// reported done, in the order node/ready.go does both) and when it fails.
type txLog struct {
	tr        *transcript
	epoch     int32
	leader    bool
	next      int64      // the offset the next record takes
	proposals int        // writes proposed, ever: their names p1, p2, ...
	queued    []*txWrite // proposed, not yet taken
	taken     []*txWrite // in the log, not yet committed
	kraft     int16      // the quorum's kraft.version
	refusal   *Error     // the quorum's refusal of a kraft.version upgrade
}

// txWrite is one proposal, or a write of the node's own (the leader's
// control record, activation records) when done is nil.
type txWrite struct {
	name     string
	epoch    int32
	first    int64
	recs     []metadata.Record
	encoded  [][]byte
	stamp    func(int64)
	done     func(int64, error)
	upgrade  *kraftUpgrade
	reported bool // done was called
}

func (w *txWrite) end() int64 { return w.first + int64(len(w.recs)) }

// tell gives the core the quorum's state, as the node's seam does when it
// changes.
func (l *txLog) tell() {
	l.tr.core.SetQuorum(Quorum{Epoch: l.epoch, Leader: l.leader, KRaftVersion: l.kraft})
}

func (l *txLog) Propose(epoch int32, recs []metadata.Record, stamp func(int64), done func(int64, error)) error {
	l.queue(&txWrite{epoch: epoch, recs: recs, stamp: stamp, done: done}, "")
	return nil
}

func (l *txLog) ProposeKRaftUpgrade(epoch int32, version int16, validateOnly bool, recs []metadata.Record, done func(int64, error)) error {
	up := &kraftUpgrade{version: version, validateOnly: validateOnly}
	l.queue(&txWrite{epoch: epoch, recs: recs, done: done, upgrade: up}, fmt.Sprintf(" kraft.version=%d validate=%v", version, validateOnly))
	return nil
}

func (l *txLog) queue(w *txWrite, note string) {
	l.proposals++
	w.name, w.first = fmt.Sprintf("p%d", l.proposals), -1
	l.queued = append(l.queued, w)
	l.tr.printf("propose %s epoch=%d%s:%s", w.name, w.epoch, note, l.tr.records(w.recs))
}

// take gives the first n queued writes their offsets (all when n < 0).
// A write for an epoch this node does not lead is refused, as is a
// kraft.version upgrade the quorum refuses; a validate-only upgrade is
// answered without writing.
func (l *txLog) take(n int) {
	if n < 0 || n > len(l.queued) {
		n = len(l.queued)
	}
	batch := l.queued[:n]
	l.queued = l.queued[n:]
	for _, w := range batch { // a stamp may propose more; they wait
		switch up := w.upgrade; {
		case !l.leader || w.epoch != l.epoch:
			l.tr.printf("%s refused: epoch %d is not led here", w.name, w.epoch)
			w.done(-1, ErrNotController)
			continue
		case up != nil && l.refusal != nil:
			l.tr.printf("%s refused by the quorum", w.name)
			w.done(-1, &KRaftRefusal{Err: l.refusal})
			continue
		case up != nil && up.validateOnly:
			l.tr.printf("%s validated by the quorum", w.name)
			w.done(-1, nil)
			continue
		case up != nil:
			l.kraft = up.version
			l.tell()
		}
		w.first = l.next
		l.tr.printf("%s taken at %s", w.name, offsets(w))
		l.append(w)
	}
}

// append puts w at the end of the log, encoded as the log would hold it:
// after the stamp, which writes the offset into records that carry it.
func (l *txLog) append(w *txWrite) {
	w.first = l.next
	if w.stamp != nil {
		w.stamp(w.first)
	}
	for _, r := range w.recs {
		if r == nil {
			w.encoded = append(w.encoded, nil) // a control record
		} else {
			w.encoded = append(w.encoded, metadata.EncodeValue(r))
		}
	}
	l.next = w.end()
	l.taken = append(l.taken, w)
}

// commit commits the taken writes below end (all when end < 0): replays
// their records into the committed image, then reports them done.
func (l *txLog) commit(end int64) {
	n := 0
	for n < len(l.taken) && (end < 0 || l.taken[n].end() <= end) {
		n++
	}
	batch := l.taken[:n]
	l.taken = l.taken[n:]
	if n == 0 {
		l.tr.printf("nothing to commit")
		return
	}
	ctl := l.tr.ctl
	var names []string
	for _, w := range batch {
		names = append(names, w.name)
		for i, b := range w.encoded {
			if b == nil {
				continue
			}
			rec, err := metadata.DecodeValue(b)
			if err != nil {
				l.tr.t.Fatal(err)
			}
			if err := ctl.Replay(w.first+int64(i), rec); err != nil {
				l.tr.printf("replay: %v", err)
			}
		}
	}
	ctl.MarkApplied(batch[n-1].end() - 1)
	l.tr.printf("committed %s (offsets %d-%d)", strings.Join(names, " "), batch[0].first, batch[n-1].end()-1)
	for _, w := range batch {
		if w.done != nil && !w.reported {
			w.reported = true
			w.done(w.first, nil)
		}
	}
}

// fail reports every write not yet committed as failed. Unless keep, the
// taken ones leave the log, as a new leader's log would truncate them;
// with keep they stay and commit later, as another leader's records.
func (l *txLog) fail(keep bool) {
	failed := append(l.taken, l.queued...)
	l.queued = nil
	if !keep {
		if len(l.taken) > 0 {
			l.next = l.taken[0].first
		}
		l.taken = nil
	}
	var names []string
	for _, w := range failed {
		if w.done != nil && !w.reported {
			names = append(names, w.name)
		}
	}
	l.tr.printf("failed: %s", strings.Join(names, " "))
	for _, w := range failed {
		if w.done != nil && !w.reported {
			w.reported = true
			w.done(w.first, ErrNotController)
		}
	}
}

func offsets(w *txWrite) string {
	if len(w.recs) == 1 {
		return fmt.Sprint(w.first)
	}
	return fmt.Sprintf("%d-%d", w.first, w.end()-1)
}
