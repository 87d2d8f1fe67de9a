package metadata

import (
	"fmt"
	"io"
	"slices"
)

// LoadSnapshot reads a snapshot file into a new image.
func LoadSnapshot(r io.Reader) (*Image, SnapshotInfo, error) {
	l := &snapshotLoader{im: NewImage()}
	info, err := readSnapshot(r, l.decode, l.apply)
	im := l.im
	if err == nil && im.InTransaction() {
		err = fmt.Errorf("%w: a metadata transaction is still open at the end", ErrSnapshotFormat)
	}
	return im, info, err
}

// snapshotLoader applies a snapshot's records with savings that matter at
// a million partitions, where a load is mostly PartitionRecords:
//
//   - a PartitionRecord in its usual shape (no tagged fields) is decoded
//     into one reused record instead of a new one each, its replica lists
//     are carved from shared chunks instead of allocated one by one, and
//     its directories are read into scratch space and kept only when some
//     is known (the image drops all-MIGRATING directories anyway);
//   - an ISR equal to the replica list shares its slice, which is safe
//     because the image never modifies a stored slice in place;
//   - a topic's partition slice is sized up front from the previous topic's
//     count (a snapshot writes each topic's partitions right after it, and
//     topics tend to look alike), instead of doubling its way there.
//
// Anything else goes through DecodeValue and Apply unchanged, which also
// produce the errors for records the fast path does not accept.
type snapshotLoader struct {
	im        *Image
	topic     *Topic
	lastCount int

	partition PartitionRecord // reused for each decoded PartitionRecord
	reader    reader
	int32s    []int32 // chunk the replica lists are carved from
	dirs      []Uuid  // scratch for directories
}

// int32ChunkLen is the length of the chunks replica lists are carved from:
// large enough that allocations are rare, small enough that a chunk kept
// alive by one remaining list wastes little.
const int32ChunkLen = 4096

func (l *snapshotLoader) decode(value []byte) (Record, error) {
	// A PartitionRecord's value starts with the frame version 1, apiKey 3
	// and its version, each a one-byte uvarint. Inside a transaction the
	// image holds records until its end, so they cannot be reused there.
	if len(value) > 3 && value[0] == FrameVersion && value[1] == 3 && value[2] <= 2 && !l.im.InTransaction() {
		if r := l.decodePartition(value[3:], int16(value[2])); r != nil {
			return r, nil
		}
	}
	return DecodeValue(value)
}

// decodePartition decodes a PartitionRecord body as readFrom does, into the
// reused record, or returns nil if the body has tagged fields or does not
// decode; DecodeValue then decodes it the general way.
func (l *snapshotLoader) decodePartition(body []byte, version int16) *PartitionRecord {
	r := &l.reader
	r.src, r.err = body, nil
	used := len(l.int32s)
	p := &l.partition
	*p = PartitionRecord{Version: version}
	p.PartitionId = r.int32()
	p.TopicId = r.uuid()
	p.Replicas = l.readInt32s(r)
	p.Isr = l.readInt32s(r)
	if slices.Equal(p.Isr, p.Replicas) {
		// Give the ISR's copy back to the chunk and share the replicas.
		l.int32s = l.int32s[:len(l.int32s)-len(p.Isr)]
		p.Isr = p.Replicas
	}
	p.RemovingReplicas = l.readInt32s(r)
	p.AddingReplicas = l.readInt32s(r)
	p.Leader = r.int32()
	p.LeaderEpoch = r.int32()
	p.PartitionEpoch = r.int32()
	if version >= 1 {
		p.Directories = l.readDirectories(r)
	}
	if tags := r.uvarint(); tags != 0 || r.err != nil || len(r.src) != 0 {
		l.int32s = l.int32s[:used]
		return nil
	}
	return p
}

// readInt32s reads a non-nullable array of int32 into the current chunk.
func (l *snapshotLoader) readInt32s(r *reader) []int32 {
	n, ok := r.arrayLen(false, 4)
	if !ok || n == 0 || r.err != nil {
		return nil
	}
	if len(l.int32s)+n > cap(l.int32s) {
		l.int32s = make([]int32, 0, max(n, int32ChunkLen))
	}
	start := len(l.int32s)
	for range n {
		l.int32s = append(l.int32s, r.int32())
	}
	return l.int32s[start:len(l.int32s):len(l.int32s)]
}

// readDirectories reads a non-nullable array of directory ids, returning a
// new slice only when some id is known: all-MIGRATING is nil in the image.
func (l *snapshotLoader) readDirectories(r *reader) []Uuid {
	n, ok := r.arrayLen(false, 16)
	if !ok || n == 0 || r.err != nil {
		return nil
	}
	l.dirs = l.dirs[:0]
	for range n {
		l.dirs = append(l.dirs, r.uuid())
	}
	if migratingIfEmpty(l.dirs) == nil {
		return nil
	}
	return slices.Clone(l.dirs)
}

func (l *snapshotLoader) apply(rec Record) error {
	switch r := rec.(type) {
	case *PartitionRecord:
		if slices.Equal(r.Isr, r.Replicas) {
			r.Isr = r.Replicas
		}
		if err := l.im.Apply(r); err != nil {
			return err
		}
		if l.topic != nil && r.TopicId == l.topic.ID {
			l.lastCount = len(l.topic.Partitions)
		}
		return nil
	case *TopicRecord:
		if err := l.im.Apply(r); err != nil {
			return err
		}
		if l.topic = l.im.Topics[r.TopicId]; l.topic != nil {
			reservePartitions(l.topic, l.lastCount)
		}
		return nil
	}
	return l.im.Apply(rec)
}
