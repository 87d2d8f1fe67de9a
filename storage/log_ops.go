package storage

import (
	"fmt"
)

// TruncateTo drops every batch at or after offset, as a follower does on
// divergence, and fsyncs the result before returning. A batch holding
// offset is dropped whole, so EndOffset may end up below offset. Offsets
// below the first segment empty the log (ResetTo). The epoch cache loses the
// epochs that started at or after the new end.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	end := l.active().next
	if offset >= end {
		// Apache still trims the epoch cache: a leader may have started an
		// epoch at the end without writing to it.
		if l.epochs.truncateFromEnd(end) {
			return l.fail(l.writeEpochCheckpoint())
		}
		return nil
	}
	if offset < l.segs[0].base {
		return l.fail(l.resetLocked(offset))
	}
	return l.fail(l.truncateLocked(offset))
}

func (l *Log) truncateLocked(offset int64) error {
	// Later segments go first, so a crash in between leaves a prefix.
	for len(l.segs) > 1 && l.active().base > offset {
		s := l.active()
		if err := s.remove(l.fs, l.dir); err != nil {
			return err
		}
		l.segs = l.segs[:len(l.segs)-1]
		l.dirDirty = true
	}
	if l.dirDirty {
		if err := l.syncDir(); err != nil {
			return err
		}
	}
	s := l.active()
	pos, h, err := s.findBatch(offset)
	if err != nil {
		return err
	}
	before := s.size
	if pos < s.size {
		s.next = h.base
	}
	if err := s.log.Truncate(pos); err != nil {
		return err
	}
	s.size, s.reserved = pos, 0
	s.forgetFrom(pos)
	if err := s.log.Sync(); err != nil {
		return err
	}
	s.index.truncateTo(s.next)
	s.sinceLast = 0
	if err := s.rescanMaxTimestamp(); err != nil {
		return err
	}
	if err := s.openActiveIndexes(l.fs, l.dir, l.cfg); err != nil {
		return err
	}
	l.log.Info().Int64("offset", offset).Int64("end_offset", s.next).Int64("bytes_dropped", before-pos).
		Msg("truncated metadata log")
	l.start = min(l.start, s.next)
	if l.epochs.truncateFromEnd(s.next) || l.epochsDirty {
		return l.writeEpochCheckpoint()
	}
	return nil
}

// ResetTo drops the whole log and starts it empty at startOffset, as a
// follower does after installing a snapshot ending there. Snapshots ending
// before startOffset are deleted. It is durable when it returns.
func (l *Log) ResetTo(startOffset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	if startOffset < 0 {
		return fmt.Errorf("%w: reset to %d", ErrOffsetOutOfRange, startOffset)
	}
	return l.fail(l.resetLocked(startOffset))
}

func (l *Log) resetLocked(startOffset int64) error {
	for len(l.segs) > 0 {
		s := l.active()
		if err := s.remove(l.fs, l.dir); err != nil {
			return err
		}
		l.segs = l.segs[:len(l.segs)-1]
		l.dirDirty = true
	}
	if err := l.syncDir(); err != nil {
		return err
	}
	s, err := l.createSegment(startOffset)
	if err != nil {
		return err
	}
	l.segs = append(l.segs, s)
	if err := l.syncDir(); err != nil {
		return err
	}
	l.start = startOffset
	l.epochs.entries = nil
	if err := l.writeEpochCheckpoint(); err != nil {
		return err
	}
	l.log.Info().Int64("start_offset", startOffset).Msg("emptied metadata log")
	return l.forgetSnapshotsBefore(startOffset)
}

// DeleteSegmentsBefore moves StartOffset up to offset (which a snapshot
// must cover) and deletes the segments that lie wholly below it. The active
// segment always stays, so after a restart StartOffset is the first
// segment's base again, as in Apache.
func (l *Log) DeleteSegmentsBefore(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	if offset > l.active().next {
		return fmt.Errorf("%w: log start %d beyond end offset %d", ErrOffsetOutOfRange, offset, l.active().next)
	}
	if offset <= l.start {
		return nil
	}
	l.start = offset
	for len(l.segs) > 1 && l.segs[1].base <= offset {
		if err := l.segs[0].remove(l.fs, l.dir); err != nil {
			return l.fail(err)
		}
		l.log.Info().Int64("segment", l.segs[0].base).Int64("log_start", offset).Msg("deleted segment below the log start")
		l.segs = l.segs[1:]
		l.dirDirty = true
	}
	if l.dirDirty {
		if err := l.syncDir(); err != nil {
			return l.fail(err)
		}
	}
	if l.epochs.truncateFromStart(offset) {
		return l.fail(l.writeEpochCheckpoint())
	}
	return nil
}

// StartOffset is the first offset the log can serve.
func (l *Log) StartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.start
}

// EndOffset is the next offset to be written (the log end offset).
func (l *Log) EndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.active().next
}

// LastEpoch is the epoch of the last batch; for an empty log, the epoch of
// the newest snapshot if it ends at EndOffset (KafkaMetadataLog's
// lastFetchedEpoch); otherwise 0.
func (l *Log) LastEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lastEpochLocked()
}

func (l *Log) lastEpochLocked() int32 {
	if e, ok := l.epochs.latest(); ok {
		return e.Epoch
	}
	if n := len(l.snapshots); n > 0 && l.snapshots[n-1].EndOffset == l.active().next {
		return l.snapshots[n-1].Epoch
	}
	return 0
}

// EndOffsetForEpoch is LeaderEpochFileCache.endOffsetFor plus the snapshot
// case of KafkaMetadataLog.endOffsetForEpoch: the end offset of the
// greatest epoch at or below epoch, and that epoch (the requested epoch
// itself when it is below every epoch kept); for the latest epoch,
// (EndOffset, epoch). When that answer is the end of the oldest snapshot
// and the epoch asked for, the snapshot's id is returned instead. It returns
// (-1, -1) when the cache cannot answer (no epochs, epoch -1, or an epoch
// above every known one); KafkaMetadataLog then answers (EndOffset,
// LastEpoch), which is left to the caller.
func (l *Log) EndOffsetForEpoch(epoch int32) (endOffset int64, foundEpoch int32) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, o := l.epochs.endOffsetFor(epoch, l.active().next)
	if o == -1 {
		return -1, -1
	}
	if len(l.snapshots) > 0 {
		earliest := l.snapshots[0]
		if o == earliest.EndOffset && e == epoch {
			return earliest.EndOffset, earliest.Epoch
		}
	}
	return o, e
}

// EpochEntries returns a copy of the leader epoch cache, oldest first.
func (l *Log) EpochEntries() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.clone()
}

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// Close fsyncs everything, writes the final time index entry, trims the
// active segment's indexes to their entries as Apache does on close, and
// closes the files. A failed log is closed without writing.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	var err error
	if l.failed == nil {
		err = l.active().deactivate()
		if err == nil {
			err = l.syncLocked()
		}
	}
	l.closeFiles()
	l.closed = true
	return err
}

func (l *Log) closeFiles() {
	for _, s := range l.segs {
		s.close()
	}
}
