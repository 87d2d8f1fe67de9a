package storage

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/storage/batch"
	"github.com/kraftd/kraftd/storage/uuid"
)

// MetadataLogDirName is the partition directory under metadata.log.dir.
const MetadataLogDirName = "__cluster_metadata-0"

// LogConfig holds the few UnifiedLog settings the metadata log uses, and
// the operator's choice for damaged data. Zero fields take Apache's
// defaults.
type LogConfig struct {
	// SegmentBytes is metadata.log.segment.bytes: a segment rolls before an
	// append would take it past this size. Default 1 GiB.
	SegmentBytes int64
	// IndexIntervalBytes is index.interval.bytes. Default 4096.
	IndexIntervalBytes int
	// MaxIndexBytes is segment.index.bytes, the preallocated size of the
	// active segment's index files. Default 10 MiB.
	MaxIndexBytes int
	// TruncateCorrupt makes OpenLog cut the log at damage it finds before
	// the active segment (deleting everything after it) instead of
	// refusing to open with a *CorruptLogError. Only an operator who has
	// read that error should set it; see log_recover.go.
	TruncateCorrupt bool
}

func (c LogConfig) withDefaults() LogConfig {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = 1 << 30
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = 4096
	}
	if c.MaxIndexBytes < timeIndexEntrySize*2 {
		c.MaxIndexBytes = 10 << 20
	}
	return c
}

var (
	// ErrOffsetOutOfRange means a read below StartOffset or above EndOffset.
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrBadAppend means Append was given bytes that are not whole, valid
	// batches continuing the log.
	ErrBadAppend = errors.New("storage: invalid append")
	// ErrClosed means the Log was closed.
	ErrClosed = errors.New("storage: log closed")
)

// Log is the __cluster_metadata-0 partition: segments of RecordBatch v2,
// their indexes, the leader epoch cache and the snapshots next to them, in
// the files and formats Apache's KafkaMetadataLog/UnifiedLog uses.
//
// Append writes without fsync; Sync makes everything appended so far
// durable. After any write or fsync error the Log refuses further changes
// (the page cache can no longer be trusted); reopen it to recover.
// Methods are safe for concurrent use; Read runs in parallel with Read.
type Log struct {
	mu  sync.RWMutex
	fs  FS
	dir string
	cfg LogConfig
	log zerolog.Logger

	segs      []*segment // by base offset; the last one is active
	start     int64
	epochs    epochCache
	snapshots []SnapshotID // sorted

	dirDirty    bool // names created or removed since the last SyncDir
	epochsDirty bool // epoch cache differs from leader-epoch-checkpoint
	failed      error
	closed      bool
}

// OpenLog opens (creating if needed) the log in dir and recovers it: every
// batch of every segment is checked, as Apache does for the metadata log;
// a torn or corrupt tail of the active segment is cut, while damage in an
// earlier segment, or a segment that does not continue the one before,
// fails with a *CorruptLogError naming the file and offset (unless
// cfg.TruncateCorrupt); indexes and the epoch cache are rebuilt from the
// batches; leftover temporary files and snapshots older than the log are
// removed; if the newest snapshot is ahead of the log, the log is emptied
// to start at it.
func OpenLog(fsys FS, dir string, cfg LogConfig, logger zerolog.Logger) (*Log, error) {
	l := &Log{fs: fsys, dir: dir, cfg: cfg.withDefaults(), log: logger.With().Str("dir", dir).Logger()}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := l.loadSegments(); err != nil {
		l.closeFiles()
		return nil, err
	}
	if err := l.loadSmallFiles(); err != nil {
		l.closeFiles()
		return nil, err
	}
	if err := l.loadSnapshots(); err != nil {
		l.closeFiles()
		return nil, err
	}
	if l.dirDirty {
		if err := l.syncDir(); err != nil {
			l.closeFiles()
			return nil, err
		}
	}
	return l, nil
}

func (l *Log) path(name string) string { return filepath.Join(l.dir, name) }

func (l *Log) loadSegments() error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	var bases []int64
	logs := map[int64]bool{}
	for _, n := range names {
		if b, ok := parseSegmentName(n, logSuffix); ok {
			bases = append(bases, b)
			logs[b] = true
		}
	}
	for _, n := range names {
		b, ok1 := parseSegmentName(n, indexSuffix)
		b2, ok2 := parseSegmentName(n, timeIndexSuffix)
		orphan := (ok1 && !logs[b]) || (ok2 && !logs[b2])
		// We never write these, but Apache leaves them for a background
		// delete; a leftover tmp is an interrupted checkpoint write.
		leftover := strings.HasSuffix(n, ".log.deleted") || strings.HasSuffix(n, ".index.deleted") ||
			strings.HasSuffix(n, ".timeindex.deleted") ||
			n == LeaderEpochCheckpointName+".tmp" || n == PartitionMetadataName+".tmp"
		if orphan || leftover {
			l.log.Info().Str("file", n).Msg("removing leftover file")
			if err := l.fs.Remove(l.path(n)); err != nil {
				return err
			}
			l.dirDirty = true
		}
	}
	slices.Sort(bases)
	if err := l.recoverSegments(bases); err != nil {
		return err
	}
	if len(l.segs) == 0 {
		s, err := l.createSegment(0)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
	}
	for _, s := range l.segs[:len(l.segs)-1] {
		created, err := s.writeClosedIndexes(l.fs, l.dir)
		if err != nil {
			return err
		}
		l.dirDirty = l.dirDirty || created
	}
	active := l.segs[len(l.segs)-1]
	if err := active.openActiveIndexes(l.fs, l.dir, l.cfg); err != nil {
		return err
	}
	l.dirDirty = true // the index files were recreated
	l.start = l.segs[0].base
	return nil
}

func (l *Log) dropSegmentFiles(bases []int64) error {
	for i := len(bases) - 1; i >= 0; i-- {
		s := &segment{base: bases[i]}
		if err := s.remove(l.fs, l.dir); err != nil {
			return err
		}
		l.dirDirty = true
	}
	return nil
}

// createSegment makes the empty files of a new active segment.
func (l *Log) createSegment(base int64) (*segment, error) {
	s := &segment{base: base, next: base, maxTimestamp: noTimestamp, maxTimestampOffset: base, lastEpoch: -1}
	s.index = newSegmentIndex(base, l.cfg.MaxIndexBytes)
	var err error
	if s.log, err = l.fs.Create(s.path(l.dir, logSuffix)); err != nil {
		return nil, err
	}
	l.dirDirty = true
	if err := s.openActiveIndexes(l.fs, l.dir, l.cfg); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// loadSmallFiles makes leader-epoch-checkpoint match the rebuilt cache and
// writes partition.metadata if it is missing or names another topic.
func (l *Log) loadSmallFiles() error {
	cp := l.path(LeaderEpochCheckpointName)
	data, err := readFile(l.fs, cp)
	switch {
	case isNotExist(err) && len(l.epochs.entries) == 0:
		// Apache creates the file empty and fills it on the first epoch.
		f, err := l.fs.Create(cp)
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		l.dirDirty = true
	case err != nil && !isNotExist(err):
		return err
	default:
		have, perr := ParseLeaderEpochCheckpoint(data)
		if isNotExist(err) || perr != nil || !slices.Equal(have, l.epochs.entries) {
			l.log.Info().Interface("checkpoint", have).Interface("from_log", l.epochs.entries).
				Msg("rewriting leader-epoch-checkpoint from the log")
			if err := l.writeEpochCheckpoint(); err != nil {
				return err
			}
		}
	}
	pm := l.path(PartitionMetadataName)
	data, err = readFile(l.fs, pm)
	if err != nil && !isNotExist(err) {
		return err
	}
	if id, perr := ParsePartitionMetadata(data); err != nil || perr != nil || id != uuid.MetadataTopicID {
		return WriteFileAtomic(l.fs, pm, EncodePartitionMetadata(uuid.MetadataTopicID))
	}
	return nil
}

func (l *Log) writeEpochCheckpoint() error {
	if err := WriteFileAtomic(l.fs, l.path(LeaderEpochCheckpointName), EncodeLeaderEpochCheckpoint(l.epochs.entries)); err != nil {
		return err
	}
	l.epochsDirty = false
	return nil
}

func (l *Log) syncDir() error {
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	l.dirDirty = false
	return nil
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// check returns the error that stops a change to the log, if any.
func (l *Log) check() error {
	if l.closed {
		return ErrClosed
	}
	if l.failed != nil {
		return fmt.Errorf("storage: log unusable after an earlier I/O error: %w", l.failed)
	}
	return nil
}

// fail poisons the log with err and returns it.
func (l *Log) fail(err error) error {
	if err != nil && l.failed == nil {
		l.failed = err
		l.log.Error().Err(err).Msg("metadata log I/O failed; refusing further changes until reopened")
	}
	return err
}

// Append writes raw, one or more whole batches whose first base offset is
// EndOffset and whose offsets continue each other, to the active segment,
// rolling first if the segment would pass SegmentBytes. Nothing is fsynced:
// call Sync before acknowledging. Batch epochs may not go down; a batch with
// a new epoch starts that epoch in the leader epoch cache.
func (l *Log) Append(raw []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	heads, err := l.validateAppend(raw)
	if err != nil {
		return err
	}
	s := l.active()
	last := heads[len(heads)-1].LastOffset()
	if s.size > 0 && (s.size > l.cfg.SegmentBytes-int64(len(raw)) || s.index.offsetFull() ||
		s.index.timeFull() || last-s.base > math.MaxInt32) {
		if s, err = l.roll(heads[0].BaseOffset); err != nil {
			return l.fail(err)
		}
	}
	if end := s.size + int64(len(raw)); end > s.reserved {
		s.reserved = end + reserveAhead
		reserveBlocks(s.log, s.size, s.reserved-s.size)
	}
	if _, err := s.log.WriteAt(raw, s.size); err != nil {
		return l.fail(fmt.Errorf("storage: append to segment %d: %w", s.base, err))
	}
	pos := s.size
	for _, h := range heads {
		addedOff, addedTime := s.indexBatch(h, pos, l.cfg.IndexIntervalBytes)
		if err := s.writeLastIndexEntries(addedOff, addedTime); err != nil {
			return l.fail(fmt.Errorf("storage: write index of segment %d: %w", s.base, err))
		}
		if latest, ok := l.epochs.latest(); !ok || h.PartitionLeaderEpoch > latest.Epoch {
			l.epochsDirty = l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) || l.epochsDirty
		}
		s.noteAppended(h, pos)
		pos += int64(h.Size())
	}
	s.size, s.next = pos, last+1
	return nil
}

func (l *Log) validateAppend(raw []byte) ([]batch.Header, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: no batches", ErrBadAppend)
	}
	next := l.active().next
	epoch := int32(-1)
	if latest, ok := l.epochs.latest(); ok {
		epoch = latest.Epoch
	}
	var heads []batch.Header
	for pos := 0; pos < len(raw); {
		h, err := batch.Check(raw[pos:])
		if err != nil {
			return nil, fmt.Errorf("%w: batch at byte %d: %v", ErrBadAppend, pos, err)
		}
		if h.BaseOffset != next {
			return nil, fmt.Errorf("%w: batch base offset %d, log end offset %d", ErrBadAppend, h.BaseOffset, next)
		}
		if h.PartitionLeaderEpoch < 0 || h.PartitionLeaderEpoch < epoch {
			return nil, fmt.Errorf("%w: batch at offset %d has epoch %d, log is at epoch %d", ErrBadAppend, h.BaseOffset, h.PartitionLeaderEpoch, epoch)
		}
		if h.Size() > math.MaxInt32/2 {
			return nil, fmt.Errorf("%w: batch of %d bytes", ErrBadAppend, h.Size())
		}
		epoch = h.PartitionLeaderEpoch
		next = h.NextOffset()
		heads = append(heads, h)
		pos += h.Size()
	}
	return heads, nil
}

// roll closes the active segment (final time entry, trimmed and fsynced
// indexes, fsynced .log) and starts a new one at base.
func (l *Log) roll(base int64) (*segment, error) {
	old := l.active()
	if err := old.deactivate(); err != nil {
		return nil, err
	}
	s, err := l.createSegment(base)
	if err != nil {
		return nil, err
	}
	l.segs = append(l.segs, s)
	l.log.Info().Int64("segment", base).Int64("previous_bytes", old.size).Msg("rolled metadata log segment")
	return s, nil
}

// reserveAhead is how many bytes past an append the active segment gets
// disk blocks reserved for at a time: an fdatasync of appends into reserved
// blocks writes the data and the size, and no block-allocation metadata.
const reserveAhead = 4 << 20

// Sync makes every batch appended so far durable: it fsyncs the active
// segment, the directory if segments were created, and the epoch checkpoint
// if a new epoch began. Index files are not fsynced here: they are derived
// data that OpenLog always rebuilds, and each fsync costs latency.
//
// The segment's fsync runs without holding the log, so Read and Append go
// on meanwhile (a leader keeps serving followers while its own fsync runs);
// what they append may or may not be covered. The caller must not truncate,
// reset or close the log while a Sync runs.
func (l *Log) Sync() error {
	l.mu.Lock()
	if err := l.check(); err != nil {
		l.mu.Unlock()
		return err
	}
	active := l.active()
	l.mu.Unlock()
	err := syncData(active.log)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil && !slices.Contains(l.segs, active) {
		// Rolled (and so synced) and then deleted below a snapshot while
		// the fsync ran: its file was closed under it, nothing is lost.
		err = nil
	}
	if err != nil {
		return l.fail(fmt.Errorf("storage: fsync segment %d: %w", active.base, err))
	}
	if err := l.check(); err != nil {
		return err
	}
	return l.fail(l.syncNamesLocked())
}

func (l *Log) syncLocked() error {
	if err := l.active().log.Sync(); err != nil {
		return fmt.Errorf("storage: fsync segment %d: %w", l.active().base, err)
	}
	return l.syncNamesLocked()
}

// syncNamesLocked makes new segment names and a new epoch durable.
func (l *Log) syncNamesLocked() error {
	if l.dirDirty {
		if err := l.syncDir(); err != nil {
			return err
		}
	}
	if l.epochsDirty {
		return l.writeEpochCheckpoint()
	}
	return nil
}

// Read returns whole batches starting with the batch that holds offset,
// from one segment, adding batches while the total stays within maxBytes;
// the first batch is returned whole even if bigger than maxBytes. At
// EndOffset it returns no bytes. Offsets below StartOffset or above
// EndOffset are ErrOffsetOutOfRange. The bytes are the caller's own; one
// done with them may give them back with RecycleRead.
func (l *Log) Read(offset int64, maxBytes int) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	end := l.active().next
	if offset < l.start || offset > end {
		return nil, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, l.start, end)
	}
	if offset == end {
		return nil, nil
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	for ; i < len(l.segs) && l.segs[i].next <= offset; i++ {
	}
	s := l.segs[i]
	pos, first, err := s.findBatch(offset)
	if err != nil {
		return nil, err
	}
	n := min(int64(max(maxBytes, 0)), s.size-pos)
	n = max(n, first.size)
	buf := takeReadBuffer(int(n))
	if _, err := s.log.ReadAt(buf, pos); err != nil {
		return nil, fmt.Errorf("storage: read segment %d at %d: %w", s.base, pos, err)
	}
	// Keep only whole batches.
	r := batch.NewSliceReader(buf, 0)
	for {
		if _, err := r.NextHeader(); err != nil {
			break
		}
	}
	return buf[:r.Pos()], nil
}
