package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kraftd/kraftd/storage/batch"
)

// Segment file names: the base offset in 20 digits plus a suffix.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

func segmentName(base int64, suffix string) string { return fmt.Sprintf("%020d%s", base, suffix) }

// parseSegmentName returns the base offset of a "%020d<suffix>" name.
func parseSegmentName(name, suffix string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, suffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil && base >= 0
}

// segment is one "<base>.log" with its two indexes. Only the active (last)
// segment has its index files open; a closed segment keeps its .log open for
// reads and its indexes in memory.
type segment struct {
	base int64
	size int64 // bytes of valid batches in .log
	// reserved is how far the .log has disk blocks reserved past its size
	// (reserveBlocks); 0 when nothing is known to be reserved.
	reserved int64
	next     int64 // offset after the last batch; base when empty

	log       File
	offFile   File // nil unless active
	timeFile  File // nil unless active
	index     segmentIndex
	sinceLast int // bytes appended since the last index entry

	// recent are where the newest batches appended in this run start, in
	// order and reaching the end of the segment: the quorum reads at or
	// near the log end (followers' fetches, replay of what just committed),
	// and finds those batches here without reading headers from the file.
	recent []batchPos

	// Greatest batch max timestamp so far and the last offset of its batch.
	maxTimestamp       int64
	maxTimestampOffset int64
	lastEpoch          int32 // epoch of the last batch, -1 when empty
}

func (s *segment) path(dir, suffix string) string {
	return filepath.Join(dir, segmentName(s.base, suffix))
}

type batchHead struct {
	base int64
	size int64
	last int64
}

func headOf(h batch.Header) batchHead {
	return batchHead{base: h.BaseOffset, size: int64(h.Size()), last: h.LastOffset()}
}

// indexBatch updates the in-memory indexes for a batch about to be placed at
// pos, following LogSegment.append. It returns which index entries it added.
func (s *segment) indexBatch(h batch.Header, pos int64, interval int) (addedOffset, addedTime bool) {
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp, s.maxTimestampOffset = h.MaxTimestamp, h.LastOffset()
	}
	if s.sinceLast > interval {
		addedOffset = s.index.appendOffset(h.LastOffset(), int32(pos))
		addedTime = s.index.maybeAppendTime(s.maxTimestamp, s.maxTimestampOffset)
		s.sinceLast = 0
	}
	s.sinceLast += h.Size()
	return addedOffset, addedTime
}

// writeLastIndexEntries writes the newest in-memory entries to the active
// segment's preallocated index files, as Apache's mmap writes would.
func (s *segment) writeLastIndexEntries(offset, time bool) error {
	if offset && s.offFile != nil {
		n := len(s.index.offsets) - 1
		b := encodeOffsetEntry(nil, s.base, s.index.offsets[n])
		if _, err := s.offFile.WriteAt(b, int64(n)*offsetIndexEntrySize); err != nil {
			return err
		}
	}
	if time && s.timeFile != nil {
		n := len(s.index.times) - 1
		b := encodeTimeEntry(nil, s.base, s.index.times[n])
		if _, err := s.timeFile.WriteAt(b, int64(n)*timeIndexEntrySize); err != nil {
			return err
		}
	}
	return nil
}

// recoverResult says where a segment scan stopped and why.
type recoverResult struct {
	validBytes int64
	fileSize   int64
	reason     error // nil when the whole file was valid
}

// recover scans the .log from the start like LogSegment.recover: it checks
// every batch (length, CRC, magic, offsets contiguous from expectNext, epochs
// never decreasing), rebuilds the indexes and the max timestamp, and stops
// at the first bad or partial batch. onBatch sees each good batch's header.
// It does not modify the file.
func (s *segment) recover(expectNext int64, lastEpoch int32, cfg LogConfig, onBatch func(batch.Header)) (recoverResult, error) {
	st, err := s.log.Stat()
	if err != nil {
		return recoverResult{}, err
	}
	res := recoverResult{fileSize: st.Size()}
	s.index = newSegmentIndex(s.base, cfg.MaxIndexBytes)
	s.sinceLast, s.size, s.next = 0, 0, s.base
	s.maxTimestamp, s.maxTimestampOffset = noTimestamp, s.base
	s.lastEpoch = -1
	var lastIndexPos int64
	pos := int64(0)
	r := batch.NewReaderAt(s.log, 0, res.fileSize, 0)
	for {
		h, raw, err := r.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, batch.ErrShort) || errors.Is(err, batch.ErrCorrupt) {
			res.reason = err
			break
		}
		if err != nil {
			return res, err
		}
		if _, err := batch.Check(raw); err != nil {
			res.reason = err
			break
		}
		if h.BaseOffset != expectNext {
			res.reason = fmt.Errorf("%w: batch at byte %d has base offset %d, want %d", batch.ErrCorrupt, pos, h.BaseOffset, expectNext)
			break
		}
		if h.LastOffset()-s.base > math.MaxInt32 {
			res.reason = fmt.Errorf("%w: offset %d does not fit the segment at %d", batch.ErrCorrupt, h.LastOffset(), s.base)
			break
		}
		// The leader epoch is outside the CRC, so a flipped epoch passes
		// Check; in the metadata log epochs never go down or below zero.
		if h.PartitionLeaderEpoch < 0 || h.PartitionLeaderEpoch < lastEpoch {
			res.reason = fmt.Errorf("%w: batch at offset %d has leader epoch %d after epoch %d", batch.ErrCorrupt, h.BaseOffset, h.PartitionLeaderEpoch, lastEpoch)
			break
		}
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.maxTimestampOffset = h.MaxTimestamp, h.LastOffset()
		}
		if pos-lastIndexPos > int64(cfg.IndexIntervalBytes) {
			s.index.appendOffset(h.LastOffset(), int32(pos))
			s.index.maybeAppendTime(s.maxTimestamp, s.maxTimestampOffset)
			lastIndexPos = pos
		}
		onBatch(h)
		lastEpoch = h.PartitionLeaderEpoch
		s.lastEpoch = lastEpoch
		pos = r.Pos()
		expectNext = h.NextOffset()
		s.size, s.next = pos, expectNext
	}
	res.validBytes = pos
	// A closed segment always ends with its greatest timestamp; recovery adds
	// it too (LogSegment.recover), ignoring the full check.
	s.index.maybeAppendTime(s.maxTimestamp, s.maxTimestampOffset)
	return res, nil
}

// openActiveIndexes (re)creates the active segment's index files: the
// entries at the front, zeros up to the preallocated size.
func (s *segment) openActiveIndexes(fsys FS, dir string, cfg LogConfig) error {
	s.closeIndexFiles()
	var err error
	if s.offFile, err = writeIndexFile(fsys, s.path(dir, indexSuffix), s.index.encodeOffsetIndex(),
		roundDown(cfg.MaxIndexBytes, offsetIndexEntrySize)); err != nil {
		return err
	}
	if s.timeFile, err = writeIndexFile(fsys, s.path(dir, timeIndexSuffix), s.index.encodeTimeIndex(),
		roundDown(cfg.MaxIndexBytes, timeIndexEntrySize)); err != nil {
		return err
	}
	return nil
}

func roundDown(n, unit int) int64 { return int64(unit * (n / unit)) }

func writeIndexFile(fsys FS, name string, entries []byte, size int64) (File, error) {
	f, err := fsys.Create(name)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(max(size, int64(len(entries)))); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.WriteAt(entries, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// writeClosedIndexes makes a closed segment's index files hold exactly its
// entries, rewriting them only when they differ, and fsyncs what it wrote.
// It reports whether it created a file (the directory then needs a sync).
func (s *segment) writeClosedIndexes(fsys FS, dir string) (created bool, err error) {
	for _, f := range []struct {
		suffix string
		want   []byte
	}{{indexSuffix, s.index.encodeOffsetIndex()}, {timeIndexSuffix, s.index.encodeTimeIndex()}} {
		name := s.path(dir, f.suffix)
		have, rerr := readFile(fsys, name)
		if rerr == nil && bytes.Equal(have, f.want) {
			continue
		}
		if rerr != nil {
			created = true
		}
		out, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return created, err
		}
		if _, err := out.WriteAt(f.want, 0); err != nil {
			out.Close()
			return created, err
		}
		if err := out.Sync(); err != nil {
			out.Close()
			return created, err
		}
		if err := out.Close(); err != nil {
			return created, err
		}
	}
	return created, nil
}

// deactivate is LogSegment.onBecomeInactiveSegment plus close: the final
// time entry, indexes trimmed to their entries, everything fsynced, index
// files closed. The .log stays open for reads.
func (s *segment) deactivate() error {
	if s.offFile == nil {
		return nil
	}
	if s.index.maybeAppendTime(s.maxTimestamp, s.maxTimestampOffset) {
		if err := s.writeLastIndexEntries(false, true); err != nil {
			return err
		}
	}
	if err := s.offFile.Truncate(int64(len(s.index.offsets)) * offsetIndexEntrySize); err != nil {
		return err
	}
	if err := s.timeFile.Truncate(int64(len(s.index.times)) * timeIndexEntrySize); err != nil {
		return err
	}
	// Truncating to its own size hands back the blocks reserved past it.
	if s.reserved > s.size {
		if err := s.log.Truncate(s.size); err != nil {
			return err
		}
		s.reserved = 0
	}
	for _, f := range []File{s.log, s.offFile, s.timeFile} {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	s.closeIndexFiles()
	s.recent = nil // reads of a closed segment are rare: the index serves them
	return nil
}

func (s *segment) closeIndexFiles() {
	if s.offFile != nil {
		s.offFile.Close()
		s.offFile = nil
	}
	if s.timeFile != nil {
		s.timeFile.Close()
		s.timeFile = nil
	}
}

func (s *segment) close() {
	s.closeIndexFiles()
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
}

// remove closes the segment and deletes its three files.
func (s *segment) remove(fsys FS, dir string) error {
	s.close()
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := fsys.Remove(s.path(dir, suffix)); err != nil && !isNotExist(err) {
			return err
		}
	}
	return nil
}

// batchPos is where a batch of the active segment starts.
type batchPos struct {
	pos int64
	batchHead
}

// recentBatches bounds segment.recent (32 bytes an entry).
const recentBatches = 4096

// noteAppended remembers a batch just appended at pos.
func (s *segment) noteAppended(h batch.Header, pos int64) {
	if len(s.recent) == recentBatches {
		s.recent = append(s.recent[:0], s.recent[recentBatches/2:]...)
	}
	s.recent = append(s.recent, batchPos{pos: pos, batchHead: headOf(h)})
}

// forgetFrom drops what recent says about bytes at or past size.
func (s *segment) forgetFrom(size int64) {
	i := sort.Search(len(s.recent), func(i int) bool { return s.recent[i].pos >= size })
	s.recent = s.recent[:i]
}

// findBatch returns the position of the batch holding offset, or s.size
// when offset is at or past the segment's end.
func (s *segment) findBatch(offset int64) (int64, batchHead, error) {
	if n := len(s.recent); n > 0 && offset >= s.recent[0].base {
		i := sort.Search(n, func(i int) bool { return s.recent[i].last >= offset })
		if i == n {
			return s.size, batchHead{}, nil
		}
		return s.recent[i].pos, s.recent[i].batchHead, nil
	}
	r := batch.NewReaderAt(s.log, s.index.lookup(offset), s.size, 0)
	for {
		pos := r.Pos()
		h, err := r.NextHeader()
		if err == io.EOF {
			return s.size, batchHead{}, nil
		}
		if err != nil {
			return 0, batchHead{}, fmt.Errorf("storage: read batch header at %d of segment %d: %w", pos, s.base, err)
		}
		if h.LastOffset() >= offset {
			return pos, headOf(h), nil
		}
	}
}

// rescanMaxTimestamp rescans the batch headers after the last time entry for the greatest max
// timestamp (LogSegment.readLargestTimestamp after a truncation).
func (s *segment) rescanMaxTimestamp() error {
	last := s.index.lastTime()
	s.maxTimestamp, s.maxTimestampOffset = last.timestamp, last.offset
	r := batch.NewReaderAt(s.log, s.index.lookup(last.offset), s.size, 0)
	for {
		h, err := r.NextHeader()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.maxTimestampOffset = h.MaxTimestamp, h.LastOffset()
		}
	}
}

func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
