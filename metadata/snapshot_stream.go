package metadata

import (
	"errors"
	"fmt"
	"io"

	"github.com/kraftd/kraftd/storage/batch"
)

// SnapshotOptions describe a snapshot being written by WriteSnapshot.
type SnapshotOptions struct {
	// Epoch is the snapshot id's epoch, the epoch of the last record it
	// contains. Every batch carries it as its partition leader epoch.
	Epoch int32
	// LastContainedLogTimestamp is the append time of the last record the
	// snapshot contains; it goes into the SnapshotHeader, and retention by
	// time (metadata.max.retention.ms) reads it back.
	LastContainedLogTimestamp int64
	// KRaftVersion and Voters: when kraft.version is at least 1 and a voter
	// set is given, the header batch also carries a KRaftVersionRecord and
	// the VotersRecord, as Apache's RecordsSnapshotWriter does.
	KRaftVersion int16
	Voters       *VotersRecord
	// Timestamp is the append time stamped on every batch; Apache uses its
	// clock when it builds each batch.
	Timestamp int64
	// Buffers, if set, is the scratch memory to use and keep for the next
	// snapshot.
	Buffers *SnapshotBuffers
	// Gzip compresses the data batches (the header and footer batches stay
	// plain). Apache writes none compressed, but its reader, and every
	// Apache release since KRaft began, inflates a gzipped batch; a
	// million-partition snapshot becomes about a third as large, and so
	// does every broker's download of it.
	Gzip bool
}

// SnapshotBuffers is WriteSnapshot's scratch memory: the pending batch's
// records and the encoded batch, up to about 16 MiB in all, and the slices
// the image's keys are sorted in (16 bytes a topic, 24 a config
// resource). A node that writes a snapshot every few minutes keeps one
// and passes it to each, as Apache's raft client keeps a pool of batch
// buffers, instead of allocating that much anew each time for the
// collector to take back. It is not for concurrent use.
type SnapshotBuffers struct {
	value   []byte // the record being added, encoded
	section []byte // the pending batch's records, encoded
	out     []byte
	gzip    *batch.Compressor
	sorted  walkScratch
}

// WriteSnapshot writes the image to w in Apache's snapshot format (see
// SnapshotFile) and returns the number of bytes written. It streams: the
// records are encoded batch by batch, so memory stays near one 8 MiB batch
// however large the image is. It fails with ErrUnwritable when the image
// cannot be written without loss; after any error the bytes written so far
// are not a snapshot and must be discarded (storage's SnapshotWriter.Abort).
func WriteSnapshot(w io.Writer, im *Image, opts SnapshotOptions) (int64, error) {
	sw := &snapshotWriter{w: w, epoch: opts.Epoch, timestamp: opts.Timestamp, compress: opts.Gzip}
	if b := opts.Buffers; b != nil {
		sw.SnapshotBuffers = *b
		defer func() {
			*b = SnapshotBuffers{value: sw.value[:0], section: sw.section[:0], out: sw.out[:0], gzip: sw.gzip, sorted: sw.sorted}
		}()
	}
	header := []batch.Record{controlRecord(&SnapshotHeaderRecord{LastContainedLogTimestamp: opts.LastContainedLogTimestamp})}
	if opts.KRaftVersion >= 1 && opts.Voters != nil {
		header = append(header, controlRecord(&KRaftVersionRecord{KRaftVersion: opts.KRaftVersion}), controlRecord(opts.Voters))
	}
	if err := sw.writeControl(header); err != nil {
		return sw.written, err
	}
	if err := im.writeRecords(sw.add, true, &sw.sorted); err != nil {
		return sw.written, err
	}
	if err := sw.flush(); err != nil {
		return sw.written, err
	}
	err := sw.writeControl([]batch.Record{controlRecord(&SnapshotFooterRecord{})})
	return sw.written, err
}

// snapshotWriter packs encoded records into data batches of at most
// MaxBatchBytes and writes each batch as soon as it is full. A record's
// value is encoded into one reused buffer and appended, framed, to the
// pending batch's records section, which is then gzipped (or copied) into
// the batch in one pass: no list of records is kept to be walked and
// encoded a second time.
type snapshotWriter struct {
	w         io.Writer
	epoch     int32
	timestamp int64
	offset    int64 // base offset of the next batch
	written   int64
	compress  bool // gzip the data batches

	// SnapshotBuffers: section holds the pending batch's count records.
	SnapshotBuffers
	count int
}

func (sw *snapshotWriter) add(r Record) error {
	sw.value = AppendValue(sw.value[:0], r)
	rec := batch.Record{OffsetDelta: int32(sw.count), Value: sw.value}
	if sw.count > 0 && batch.HeaderSize+len(sw.section)+batch.RecordSize(rec) > MaxBatchBytes {
		if err := sw.flush(); err != nil {
			return err
		}
		rec.OffsetDelta = 0
	}
	sw.section = batch.AppendRecord(sw.section, rec)
	sw.count++
	return nil
}

// flush writes the pending data batch, if any.
func (sw *snapshotWriter) flush() error {
	if sw.count == 0 {
		return nil
	}
	b := sw.builder(false)
	if sw.compress {
		if sw.gzip == nil {
			sw.gzip = new(batch.Compressor)
		}
		sw.out = sw.gzip.EncodeSection(sw.out[:0], b, sw.section, sw.count)
	} else {
		sw.out = b.EncodeSection(sw.out[:0], sw.section, sw.count)
	}
	err := sw.emit(sw.count)
	sw.section, sw.count = sw.section[:0], 0
	return err
}

// writeControl writes a batch of control records, never compressed.
func (sw *snapshotWriter) writeControl(records []batch.Record) error {
	sw.out = sw.builder(true).Encode(sw.out[:0], records)
	return sw.emit(len(records))
}

func (sw *snapshotWriter) builder(control bool) batch.Builder {
	return batch.Builder{BaseOffset: sw.offset, LeaderEpoch: sw.epoch, Timestamp: sw.timestamp, Control: control}
}

// emit writes the batch in out, which holds count records.
func (sw *snapshotWriter) emit(count int) error {
	n, err := sw.w.Write(sw.out)
	sw.written += int64(n)
	sw.offset += int64(count)
	return err
}

// SnapshotInfo is what a snapshot file says about itself besides its data
// records.
type SnapshotInfo struct {
	Epoch                     int32
	LastContainedLogTimestamp int64
	// KRaftVersion and Voters come from the header batch; 0 and nil when it
	// holds only the SnapshotHeader (kraft.version 0).
	KRaftVersion int16
	Voters       *VotersRecord
	Records      int64 // data records
	Bytes        int64 // file size
}

// maxSnapshotBatch bounds one batch of a snapshot file; a longer length
// field is corruption.
const maxSnapshotBatch = batch.LogOverhead + 1<<30

// ReadSnapshotHeader reads only a snapshot file's first batch, its header
// (SnapshotHeader, and KRaftVersion and Voters at kraft.version 1), for
// callers that need its epoch or timestamp: the data batches after it,
// megabytes each and maybe compressed, are neither read nor inflated.
// Records and Bytes of the answer are zero.
func ReadSnapshotHeader(r io.Reader) (SnapshotInfo, error) {
	var info SnapshotInfo
	h, buf, err := batch.NewReader(r, maxSnapshotBatch).Next()
	if errors.Is(err, batch.ErrShort) || err == io.EOF {
		return info, fmt.Errorf("%w: no whole header batch: %v", ErrSnapshotFormat, err)
	}
	if err != nil {
		return info, err
	}
	if !h.IsControl() { // checked before Decode would inflate a data batch
		return info, fmt.Errorf("%w: data before the snapshot header", ErrSnapshotFormat)
	}
	info.Epoch = h.PartitionLeaderEpoch
	var sawHeader, sawFooter bool
	offset := h.BaseOffset
	if _, err := batch.Scan(buf, func(rec batch.Record) error {
		offset++
		return info.control(rec, offset-1, &sawHeader, &sawFooter)
	}); err != nil {
		return info, err
	}
	if !sawHeader {
		return info, fmt.Errorf("%w: the first batch holds no snapshot header", ErrSnapshotFormat)
	}
	return info, nil
}

// ReadSnapshot reads a snapshot file from r one batch at a time and calls
// fn with each data record in order, checking the layout as
// DecodeSnapshotFile does. Memory stays near one batch.
func ReadSnapshot(r io.Reader, fn func(Record) error) (SnapshotInfo, error) {
	return readSnapshot(r, DecodeValue, fn)
}

// readSnapshot is ReadSnapshot with the decoder of data record values
// given, so that a loader can decode into records it reuses. Records are
// taken from each batch one at a time (batch.Scanner), so memory is one
// batch's bytes and one record, however many records the batch holds.
func readSnapshot(r io.Reader, decode func([]byte) (Record, error), fn func(Record) error) (SnapshotInfo, error) {
	sr := snapshotReader{decode: decode, fn: fn}
	batches := batch.NewReader(r, maxSnapshotBatch)
	for {
		_, buf, err := batches.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, batch.ErrShort) {
			return sr.info, fmt.Errorf("%w: %v", ErrSnapshotFormat, err)
		}
		if err != nil {
			return sr.info, err
		}
		sr.info.Bytes = batches.Pos()
		if sr.sawFooter {
			return sr.info, fmt.Errorf("%w: batch after the footer", ErrSnapshotFormat)
		}
		if err := sr.batch(buf); err != nil {
			return sr.info, err
		}
	}
	if !sr.sawHeader || !sr.sawFooter {
		return sr.info, fmt.Errorf("%w: header present %v, footer present %v", ErrSnapshotFormat, sr.sawHeader, sr.sawFooter)
	}
	return sr.info, nil
}

// snapshotReader is readSnapshot's state between batches.
type snapshotReader struct {
	decode               func([]byte) (Record, error)
	fn                   func(Record) error
	scan                 batch.Scanner
	info                 SnapshotInfo
	sawHeader, sawFooter bool

	h      batch.Header // the batch being read
	offset int64        // of the record being read
}

// batch reads one batch of the snapshot, whose bytes are buf.
func (sr *snapshotReader) batch(buf []byte) error {
	h, err := batch.ReadHeader(buf)
	if err != nil {
		return err
	}
	if !sr.sawHeader {
		sr.info.Epoch = h.PartitionLeaderEpoch
	}
	sr.h, sr.offset = h, h.BaseOffset
	_, err = sr.scan.Scan(buf, sr.record)
	return err
}

func (sr *snapshotReader) record(rec batch.Record) error {
	offset := sr.offset
	sr.offset++
	if sr.h.IsControl() {
		return sr.info.control(rec, offset, &sr.sawHeader, &sr.sawFooter)
	}
	if !sr.sawHeader {
		return fmt.Errorf("%w: data before the snapshot header", ErrSnapshotFormat)
	}
	v, err := sr.decode(rec.Value)
	if err != nil {
		return fmt.Errorf("offset %d: %w", offset, err)
	}
	sr.info.Records++
	if err := sr.fn(v); err != nil {
		return fmt.Errorf("offset %d: %w", offset, err)
	}
	return nil
}

func (info *SnapshotInfo) control(rec batch.Record, offset int64, sawHeader, sawFooter *bool) error {
	v, err := DecodeControl(rec.Key, rec.Value)
	if errors.Is(err, ErrNotKRaftControl) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("offset %d: %w", offset, err)
	}
	switch v := v.(type) {
	case *SnapshotHeaderRecord:
		if *sawHeader {
			return fmt.Errorf("%w: second snapshot header", ErrSnapshotFormat)
		}
		*sawHeader = true
		info.LastContainedLogTimestamp = v.LastContainedLogTimestamp
		return nil
	case *SnapshotFooterRecord:
		*sawFooter = true
		return nil
	}
	if !*sawHeader {
		return fmt.Errorf("%w: control record before the snapshot header", ErrSnapshotFormat)
	}
	switch v := v.(type) {
	case *KRaftVersionRecord:
		info.KRaftVersion = v.KRaftVersion
	case *VotersRecord:
		info.Voters = v
	}
	return nil
}
