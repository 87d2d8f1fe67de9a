package storage

import (
	"encoding/binary"
	"sort"
)

// Apache's segment indexes, kept in memory and mirrored to disk.
//
// .index holds 8-byte entries: int32 offset relative to the segment base,
// int32 byte position in the .log. An entry is added before a batch is
// written when more than index.interval.bytes were written since the last
// entry; its key is the batch's LAST offset and its value the batch's START
// position (LogSegment.append). A lookup of offset X takes the greatest
// entry with key <= X: the batch at that position ends at or before X, so
// the batch holding X is at or after it.
//
// .timeindex holds 12-byte entries: int64 max timestamp so far, int32
// relative offset of the last offset of the batch that carried it. An entry
// is added next to each .index entry, and once more when the segment is
// closed or rolled, but only when its timestamp is greater than the last
// entry's.
//
// While a segment is active both files are preallocated to
// segment.index.bytes (10 MiB by default) rounded down to whole entries and
// the tail is zeros; a closed segment's files are trimmed to their entries.
const (
	offsetIndexEntrySize = 8
	timeIndexEntrySize   = 12
	// noTimestamp is RecordBatch.NO_TIMESTAMP.
	noTimestamp = -1
)

type offsetEntry struct {
	offset int64 // absolute; stored relative to the segment base
	pos    int32
}

type timeEntry struct {
	timestamp int64
	offset    int64 // absolute; stored relative to the segment base
}

// segmentIndex is the in-memory copy of one segment's two indexes.
type segmentIndex struct {
	base    int64
	offsets []offsetEntry
	times   []timeEntry
	// Capacity of the preallocated files, as Apache's maxEntries.
	maxOffsetEntries int
	maxTimeEntries   int
}

func newSegmentIndex(base int64, maxIndexBytes int) segmentIndex {
	return segmentIndex{
		base:             base,
		maxOffsetEntries: maxIndexBytes / offsetIndexEntrySize,
		maxTimeEntries:   maxIndexBytes / timeIndexEntrySize,
	}
}

// offsetFull and timeFull mirror OffsetIndex.isFull and TimeIndex.isFull;
// the time index keeps its last slot free for the entry added on close.
func (x *segmentIndex) offsetFull() bool { return len(x.offsets) >= x.maxOffsetEntries }
func (x *segmentIndex) timeFull() bool   { return len(x.times) >= x.maxTimeEntries-1 }

func (x *segmentIndex) lastTime() timeEntry {
	if len(x.times) == 0 {
		return timeEntry{timestamp: noTimestamp, offset: x.base}
	}
	return x.times[len(x.times)-1]
}

// appendOffset adds an offset entry; it returns false when the offset is not
// above the last one (Apache throws there; we never call it so).
func (x *segmentIndex) appendOffset(offset int64, pos int32) bool {
	if n := len(x.offsets); n > 0 && offset <= x.offsets[n-1].offset {
		return false
	}
	x.offsets = append(x.offsets, offsetEntry{offset, pos})
	return true
}

// maybeAppendTime adds a time entry when ts is above the last entry's
// timestamp (TimeIndex.maybeAppend). It reports whether it did.
func (x *segmentIndex) maybeAppendTime(ts, offset int64) bool {
	if ts <= x.lastTime().timestamp {
		return false
	}
	x.times = append(x.times, timeEntry{ts, offset})
	return true
}

// lookup returns the position to start scanning for offset.
func (x *segmentIndex) lookup(offset int64) int64 {
	i := sort.Search(len(x.offsets), func(i int) bool { return x.offsets[i].offset > offset })
	if i == 0 {
		return 0
	}
	return int64(x.offsets[i-1].pos)
}

// truncateTo drops the entries at or after offset, as OffsetIndex.truncateTo
// and TimeIndex.truncateTo do.
func (x *segmentIndex) truncateTo(offset int64) {
	i := sort.Search(len(x.offsets), func(i int) bool { return x.offsets[i].offset >= offset })
	x.offsets = x.offsets[:i]
	j := sort.Search(len(x.times), func(j int) bool { return x.times[j].offset >= offset })
	x.times = x.times[:j]
}

func encodeOffsetEntry(dst []byte, base int64, e offsetEntry) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(int32(e.offset-base)))
	return binary.BigEndian.AppendUint32(dst, uint32(e.pos))
}

func encodeTimeEntry(dst []byte, base int64, e timeEntry) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.timestamp))
	return binary.BigEndian.AppendUint32(dst, uint32(int32(e.offset-base)))
}

// encodeOffsetIndex is the content of a closed segment's .index.
func (x *segmentIndex) encodeOffsetIndex() []byte {
	out := make([]byte, 0, len(x.offsets)*offsetIndexEntrySize)
	for _, e := range x.offsets {
		out = encodeOffsetEntry(out, x.base, e)
	}
	return out
}

// encodeTimeIndex is the content of a closed segment's .timeindex.
func (x *segmentIndex) encodeTimeIndex() []byte {
	out := make([]byte, 0, len(x.times)*timeIndexEntrySize)
	for _, e := range x.times {
		out = encodeTimeEntry(out, x.base, e)
	}
	return out
}

// DecodeOffsetIndex parses .index bytes of the segment at base. It stops at
// the first all-zero entry, where Apache's preallocated tail begins: a real
// entry always points past the first index.interval.bytes, never to 0.
func DecodeOffsetIndex(base int64, b []byte) (offsets []int64, positions []int32) {
	for i := 0; i+offsetIndexEntrySize <= len(b); i += offsetIndexEntrySize {
		rel := int32(binary.BigEndian.Uint32(b[i:]))
		pos := int32(binary.BigEndian.Uint32(b[i+4:]))
		if rel == 0 && pos == 0 {
			break
		}
		offsets = append(offsets, base+int64(rel))
		positions = append(positions, pos)
	}
	return offsets, positions
}

// DecodeTimeIndex parses .timeindex bytes of the segment at base, stopping
// at the preallocated zero tail.
func DecodeTimeIndex(base int64, b []byte) (timestamps, offsets []int64) {
	for i := 0; i+timeIndexEntrySize <= len(b); i += timeIndexEntrySize {
		ts := int64(binary.BigEndian.Uint64(b[i:]))
		rel := int32(binary.BigEndian.Uint32(b[i+8:]))
		if ts == 0 && rel == 0 {
			break
		}
		timestamps = append(timestamps, ts)
		offsets = append(offsets, base+int64(rel))
	}
	return timestamps, offsets
}
