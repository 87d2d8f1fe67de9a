// Package memlog is an in-memory quorum.Log over a simulated disk, for the
// quorum's scenario tests and simulator. Appends stay unsynced until Sync;
// Crash keeps the synced batches plus a random prefix of the unsynced ones
// (a torn tail is cut at a batch boundary, as recovery would after a CRC
// failure). Truncation and snapshot installs are durable at once.
package memlog

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage/batch"
)

// Batch is one stored RecordBatch.
type Batch struct {
	Base, Next int64
	Epoch      int32
	Raw        []byte
}

// Log is the in-memory log. The zero value is an empty log.
type Log struct {
	batches []Batch
	start   int64
	synced  int // batches[:synced] survive a crash
	snap    *snapshot
	partial *snapshot // being downloaded
}

type snapshot struct {
	id   quorum.SnapshotID
	data []byte
}

var _ quorum.Log = (*Log)(nil)

// Append adds whole batches that must continue the log.
func (l *Log) Append(raw []byte) error {
	_, err := batch.Walk(raw, func(h batch.Header, b []byte) error {
		if h.BaseOffset != l.EndOffset() {
			return fmt.Errorf("memlog: append at %d, log end %d", h.BaseOffset, l.EndOffset())
		}
		l.batches = append(l.batches, Batch{Base: h.BaseOffset, Next: h.NextOffset(), Epoch: h.PartitionLeaderEpoch, Raw: append([]byte(nil), b...)})
		return nil
	})
	return err
}

// Sync makes every appended batch durable.
func (l *Log) Sync() { l.synced = len(l.batches) }

// TruncateTo drops every batch at or after offset.
func (l *Log) TruncateTo(offset int64) {
	i := 0
	for i < len(l.batches) && l.batches[i].Next <= offset {
		i++
	}
	l.batches = l.batches[:i]
	l.synced = min(l.synced, i)
}

// WriteSnapshot applies a downloaded chunk; on the last chunk the snapshot
// is frozen and the log reset to start at its end offset.
func (l *Log) WriteSnapshot(c quorum.SnapshotChunk) error {
	if c.Position == 0 || l.partial == nil || l.partial.id != c.ID {
		l.partial = &snapshot{id: c.ID}
	}
	if int64(len(l.partial.data)) != c.Position {
		return fmt.Errorf("memlog: snapshot chunk at %d, have %d bytes", c.Position, len(l.partial.data))
	}
	l.partial.data = append(l.partial.data, c.Data...)
	if c.Done {
		l.snap, l.partial = l.partial, nil
		l.batches, l.synced, l.start = nil, 0, c.ID.EndOffset
	}
	return nil
}

// TakeSnapshot writes a local snapshot of everything below endOffset (which
// must be a batch boundary at or below the committed offset) and drops that
// prefix of the log. Its content is the raw batches, enough for tests.
func (l *Log) TakeSnapshot(endOffset int64) error {
	if endOffset <= l.start {
		return nil
	}
	var data []byte
	epoch := int32(-1)
	i := 0
	for ; i < len(l.batches) && l.batches[i].Next <= endOffset; i++ {
		data = append(data, l.batches[i].Raw...)
		epoch = l.batches[i].Epoch
	}
	if i == 0 || l.batches[i-1].Next != endOffset {
		return errors.New("memlog: snapshot end is not a batch boundary")
	}
	if i > l.synced {
		return errors.New("memlog: snapshot of unsynced batches")
	}
	if l.snap != nil {
		data = append(append([]byte(nil), l.snap.data...), data...)
	}
	l.snap = &snapshot{id: quorum.SnapshotID{EndOffset: endOffset, Epoch: epoch}, data: data}
	l.batches = append([]Batch(nil), l.batches[i:]...)
	l.synced -= i
	l.start = endOffset
	return nil
}

// Crash drops unsynced batches, keeping a random prefix of them when r is
// not nil (a write that reached the disk without its fsync).
func (l *Log) Crash(r *rand.Rand) {
	keep := l.synced
	if r != nil && len(l.batches) > l.synced {
		keep += r.IntN(len(l.batches) - l.synced + 1)
	}
	l.batches = l.batches[:keep]
	l.synced = keep
	l.partial = nil
}

// Batches returns the stored batches (shared; do not modify).
func (l *Log) Batches() []Batch { return l.batches }

// SnapshotData returns the latest snapshot's bytes.
func (l *Log) SnapshotData() []byte {
	if l.snap == nil {
		return nil
	}
	return l.snap.data
}

func (l *Log) StartOffset() int64 { return l.start }

func (l *Log) EndOffset() int64 {
	if len(l.batches) == 0 {
		return l.start
	}
	return l.batches[len(l.batches)-1].Next
}

func (l *Log) LastEpoch() int32 {
	if len(l.batches) > 0 {
		return l.batches[len(l.batches)-1].Epoch
	}
	if l.snap != nil {
		return l.snap.id.Epoch
	}
	return 0
}

// EndOffsetForEpoch follows Apache's LeaderEpochFileCache.endOffsetFor over
// the epochs of the batches held.
func (l *Log) EndOffsetForEpoch(epoch int32) (int64, int32) {
	if len(l.batches) == 0 || epoch < 0 {
		return -1, -1
	}
	if last := l.batches[len(l.batches)-1].Epoch; epoch == last {
		return l.EndOffset(), last
	}
	floor := int32(-1)
	for _, b := range l.batches {
		if b.Epoch > epoch {
			if floor < 0 {
				return b.Base, epoch
			}
			return b.Base, floor
		}
		floor = b.Epoch
	}
	return -1, -1
}

func (l *Log) Read(offset int64, maxBytes int) ([]byte, error) {
	var out []byte
	for _, b := range l.batches {
		if b.Next <= offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b.Raw) > maxBytes {
			break
		}
		out = append(out, b.Raw...)
	}
	return out, nil
}

func (l *Log) LatestSnapshot() (quorum.SnapshotID, bool) {
	if l.snap == nil {
		return quorum.SnapshotID{}, false
	}
	return l.snap.id, true
}

// EarliestSnapshot is the only snapshot memlog keeps: the latest.
func (l *Log) EarliestSnapshot() (quorum.SnapshotID, bool) { return l.LatestSnapshot() }

func (l *Log) ReadSnapshot(id quorum.SnapshotID, pos int64, maxBytes int) ([]byte, int64, error) {
	if l.snap == nil || l.snap.id != id {
		return nil, 0, errors.New("memlog: no such snapshot")
	}
	size := int64(len(l.snap.data))
	if pos < 0 || pos > size {
		return nil, size, nil
	}
	end := min(size, pos+int64(maxBytes))
	return append([]byte(nil), l.snap.data[pos:end]...), size, nil
}

// Clone copies the log (for checkers that compare histories).
func (l *Log) Clone() *Log {
	c := *l
	c.batches = append([]Batch(nil), l.batches...)
	return &c
}
