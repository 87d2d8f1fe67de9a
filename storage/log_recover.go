package storage

import (
	"errors"
	"fmt"
	"os"

	"github.com/kraftd/kraftd/storage/batch"
)

// What OpenLog may cut. A segment is fsynced whole before the next one is
// created (roll deactivates it first), and truncation and reset remove
// later segments before they change an earlier one. So after any crash
// every segment but the last holds only fsynced bytes, and damage there
// is damage to data that was acknowledged: OpenLog refuses it with a
// *CorruptLogError unless LogConfig.TruncateCorrupt says to cut there.
// The last (active) segment is different: writes since its last fsync may
// have reached the disk in part, in any order, with a flipped byte, and
// nothing on disk tells how far the last fsync reached, so damage anywhere
// in it is taken for a torn tail and cut, as Apache does.

// ErrCorruptLog is what a *CorruptLogError matches with errors.Is.
var ErrCorruptLog = errors.New("storage: metadata log corrupt before its active segment")

// CorruptLogError says where OpenLog found damage it would not cut on its
// own: a bad batch in a closed segment, or a segment that does not
// continue the one before it. Nothing was changed on disk.
type CorruptLogError struct {
	// File is the segment's path.
	File string
	// Pos is the byte of File where the valid batches end.
	Pos int64
	// Offset is the first offset that cannot be read: the offset of the
	// bad batch, or the one the segment should have started at.
	Offset int64
	// BytesAfter and SegmentsAfter are what cutting there would delete:
	// the rest of File and the segments after it.
	BytesAfter    int64
	SegmentsAfter int
	// Reason is what was wrong.
	Reason error
}

func (e *CorruptLogError) Error() string {
	return fmt.Sprintf("storage: metadata log corrupt in %s at byte %d (offset %d): %v; "+
		"cutting the log there would delete %d bytes of that file and %d later segments",
		e.File, e.Pos, e.Offset, e.Reason, e.BytesAfter, e.SegmentsAfter)
}

// Is makes errors.Is(err, ErrCorruptLog) true.
func (e *CorruptLogError) Is(target error) bool { return target == ErrCorruptLog }

// Unwrap returns the reason.
func (e *CorruptLogError) Unwrap() error { return e.Reason }

// recoverSegments opens and checks the segments with the given sorted base
// offsets, appending the good ones to l.segs and rebuilding the epoch cache,
// and stops at the first damage: a torn tail of the last segment is cut,
// anything earlier is refused or cut as l.cfg.TruncateCorrupt says.
func (l *Log) recoverSegments(bases []int64) error {
	lastEpoch := int32(-1)
	for i, base := range bases {
		s := &segment{base: base}
		if i > 0 && base != l.active().next {
			st, err := l.fs.Stat(s.path(l.dir, logSuffix))
			if err != nil {
				return err
			}
			return l.damaged(s, 0, l.active().next, st.Size(), bases[i+1:], fmt.Errorf(
				"%w: segment starts at offset %d, but the segment before it ends at %d", batch.ErrCorrupt, base, l.active().next))
		}
		var err error
		if s.log, err = l.fs.OpenFile(s.path(l.dir, logSuffix), os.O_RDWR, 0); err != nil {
			return err
		}
		l.segs = append(l.segs, s)
		res, err := s.recover(base, lastEpoch, l.cfg, func(h batch.Header) {
			if last, ok := l.epochs.latest(); !ok || h.PartitionLeaderEpoch > last.Epoch {
				l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
			}
		})
		if err != nil {
			return err
		}
		if s.lastEpoch >= 0 {
			lastEpoch = s.lastEpoch
		}
		switch {
		case res.reason == nil:
			continue
		case i == len(bases)-1:
			l.log.Warn().Int64("segment", base).Int64("cut_at_offset", s.next).
				Int64("cut_at_byte", res.validBytes).Int64("bytes_cut", res.fileSize-res.validBytes).
				Str("reason", res.reason.Error()).Msg("truncating the torn tail of the active segment")
			return l.cutSegment(s, res.validBytes)
		default:
			return l.damaged(s, res.validBytes, s.next, res.fileSize-res.validBytes, bases[i+1:], res.reason)
		}
	}
	return nil
}

// damaged handles damage in segment s, not the log's last: it returns a
// *CorruptLogError, or with TruncateCorrupt cuts s at pos and deletes the
// later segments. A gap (pos 0 of a segment not yet in l.segs) drops s too.
func (l *Log) damaged(s *segment, pos, offset, bytesAfter int64, later []int64, reason error) error {
	inLog := len(l.segs) > 0 && l.active() == s
	cerr := &CorruptLogError{File: s.path(l.dir, logSuffix), Pos: pos, Offset: offset, BytesAfter: bytesAfter,
		SegmentsAfter: len(later), Reason: reason}
	if !l.cfg.TruncateCorrupt {
		return cerr
	}
	l.log.Error().Err(cerr).Msg("cutting the metadata log at corrupt data, as configured (truncate corrupt log)")
	// Later segments go first and durably, so a crash before the cut
	// below leaves this damage in place to be refused again, never a gap.
	if !inLog {
		later = append([]int64{s.base}, later...)
	}
	if err := l.dropSegmentFiles(later); err != nil {
		return err
	}
	if err := l.syncDir(); err != nil {
		return err
	}
	if !inLog {
		return nil
	}
	return l.cutSegment(s, pos)
}

// cutSegment truncates s to its first size bytes durably.
func (l *Log) cutSegment(s *segment, size int64) error {
	if err := s.log.Truncate(size); err != nil {
		return err
	}
	return s.log.Sync()
}
