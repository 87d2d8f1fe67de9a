package metadata

import (
	"errors"
	"fmt"

	"github.com/kraftd/kraftd/storage/batch"
)

// MaxBatchBytes is the size at which a snapshot's data batch is closed and a
// new one begun, as Apache's BatchAccumulator does (8 MiB).
const MaxBatchBytes = 8 << 20

// SnapshotFile is the content of a file in Apache's snapshot format, used by
// metadata snapshots (%020d-%010d.checkpoint), the bootstrap snapshot and
// bootstrap.checkpoint alike:
//
//  1. a control batch: SnapshotHeader, then Extra (KRaftVersion and Voters
//     when kraft.version is 1);
//  2. data batches of metadata records;
//  3. a control batch holding SnapshotFooter.
//
// Every batch carries Epoch as its partition leader epoch and base offsets
// count from 0 within the file.
type SnapshotFile struct {
	Epoch                     int32
	LastContainedLogTimestamp int64
	Extra                     []ControlValue
	Records                   []Record
}

// ErrSnapshotFormat means the bytes are valid batches but not laid out as a
// snapshot (no header first, no footer last, or data after the footer).
var ErrSnapshotFormat = errors.New("metadata: not a snapshot file")

// EncodeSnapshotFile lays f out as Apache does; timestamp is the append time
// written on every batch.
func EncodeSnapshotFile(f SnapshotFile, timestamp int64) []byte {
	header := &SnapshotHeaderRecord{LastContainedLogTimestamp: f.LastContainedLogTimestamp}
	control := []batch.Record{controlRecord(header)}
	for _, v := range f.Extra {
		control = append(control, controlRecord(v))
	}
	var offset int64
	out := batch.Builder{BaseOffset: offset, LeaderEpoch: f.Epoch, Timestamp: timestamp, Control: true}.Encode(nil, control)
	offset += int64(len(control))

	var pending []batch.Record
	size := 0
	flush := func() {
		if len(pending) == 0 {
			return
		}
		out = batch.Builder{BaseOffset: offset, LeaderEpoch: f.Epoch, Timestamp: timestamp}.Encode(out, pending)
		offset += int64(len(pending))
		pending, size = pending[:0], 0
	}
	for _, r := range f.Records {
		value := EncodeValue(r)
		if size+len(value)+batch.HeaderSize > MaxBatchBytes {
			flush()
		}
		pending = append(pending, batch.Record{Value: value})
		size += len(value) + 8
	}
	flush()
	return batch.Builder{BaseOffset: offset, LeaderEpoch: f.Epoch, Timestamp: timestamp, Control: true}.Encode(out, []batch.Record{controlRecord(&SnapshotFooterRecord{})})
}

func controlRecord(v ControlValue) batch.Record {
	key, value := EncodeControl(v)
	return batch.Record{Key: key, Value: value}
}

// DecodeSnapshotFile checks the layout of a snapshot file and decodes it,
// keeping every record: it is for bootstrap files, which hold a few.
// Records are taken from each batch one at a time (batch.Scanner), so no
// more than the decoded records is held.
func DecodeSnapshotFile(b []byte) (SnapshotFile, error) {
	var (
		f                    SnapshotFile
		sawHeader, sawFooter bool
		scan                 batch.Scanner
	)
	n, err := batch.Walk(b, func(h batch.Header, raw []byte) error {
		if sawFooter {
			return fmt.Errorf("%w: batch at offset %d after the footer", ErrSnapshotFormat, h.BaseOffset)
		}
		if !sawHeader {
			f.Epoch = h.PartitionLeaderEpoch
		}
		offset := h.BaseOffset - 1
		_, err := scan.Scan(raw, func(r batch.Record) error {
			offset++
			if !h.IsControl() {
				if !sawHeader {
					return fmt.Errorf("%w: data before the snapshot header", ErrSnapshotFormat)
				}
				rec, err := DecodeValue(r.Value)
				if err != nil {
					return fmt.Errorf("offset %d: %w", offset, err)
				}
				f.Records = append(f.Records, rec)
				return nil
			}
			v, err := DecodeControl(r.Key, r.Value)
			if errors.Is(err, ErrNotKRaftControl) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("offset %d: %w", offset, err)
			}
			switch v := v.(type) {
			case *SnapshotHeaderRecord:
				if sawHeader {
					return fmt.Errorf("%w: second snapshot header", ErrSnapshotFormat)
				}
				sawHeader = true
				f.LastContainedLogTimestamp = v.LastContainedLogTimestamp
			case *SnapshotFooterRecord:
				sawFooter = true
			default:
				if !sawHeader {
					return fmt.Errorf("%w: control record before the snapshot header", ErrSnapshotFormat)
				}
				f.Extra = append(f.Extra, v)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return f, err
	}
	if n != len(b) {
		return f, fmt.Errorf("%w: %d bytes of partial batch at the end", ErrSnapshotFormat, len(b)-n)
	}
	if !sawHeader || !sawFooter {
		return f, fmt.Errorf("%w: header present %v, footer present %v", ErrSnapshotFormat, sawHeader, sawFooter)
	}
	return f, nil
}
