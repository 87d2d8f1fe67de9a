package node

import (
	"errors"
	"fmt"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
)

// errStopWalk ends a batch.Walk early without an error.
var errStopWalk = errors.New("stop")

// logRecordFunc sees one record of the log: a decoded metadata record, or a
// control record (rec nil, raw holding its key and value). raw's bytes are
// valid only during the call.
type logRecordFunc func(offset int64, rec metadata.Record, raw batch.Record) error

// ForEachLogRecord calls fn for every record of log at offsets in [from,
// to), in order, and returns the offset after the last one it reached. It
// stops early, without error, where the log ends before to.
func ForEachLogRecord(log *storage.Log, from, to int64, fn logRecordFunc) (int64, error) {
	return walkLog(log, from, to, false, nil, fn)
}

// ForEachControlRecord is ForEachLogRecord for the control records alone:
// data batches are stepped over by their header, never decoded, so a
// metadata record this build cannot read does not stop the walk.
func ForEachControlRecord(log *storage.Log, from, to int64, fn func(offset int64, raw batch.Record) error) (int64, error) {
	return walkLog(log, from, to, true, nil, func(offset int64, _ metadata.Record, raw batch.Record) error { return fn(offset, raw) })
}

// walkLog is ForEachLogRecord; onBatch, if set, sees the header of each
// batch whose records fn has just seen (replay takes its append time).
//
// fn sees a record's Key and Value only during its call (batch.Scanner):
// a batch's records are never all held at once, however many it packs.
func walkLog(log *storage.Log, from, to int64, controlOnly bool, onBatch func(batch.Header), fn logRecordFunc) (int64, error) {
	var scan batch.Scanner
	next := from
	for next < to {
		raw, err := log.Read(next, 1<<20)
		if err != nil {
			return next, err
		}
		before := next
		_, err = batch.Walk(raw, func(h batch.Header, one []byte) error {
			if h.BaseOffset >= to {
				return errStopWalk
			}
			if controlOnly && !h.IsControl() {
				next = min(h.NextOffset(), to)
				return nil
			}
			// The scan checks the whole batch before the first record, so
			// fn sees all of a batch or none of it.
			_, err := scan.Scan(one, func(r batch.Record) error {
				offset := h.BaseOffset + int64(r.OffsetDelta)
				if offset < next || offset >= to {
					return nil
				}
				var rec metadata.Record
				if !h.IsControl() {
					var err error
					if rec, err = metadata.DecodeValue(r.Value); err != nil {
						return fmt.Errorf("offset %d: %w", offset, err)
					}
				}
				return fn(offset, rec, r)
			})
			if err != nil {
				return err
			}
			if onBatch != nil {
				onBatch(h)
			}
			next = min(h.NextOffset(), to)
			return nil
		})
		if err != nil && !errors.Is(err, errStopWalk) {
			return next, err
		}
		if errors.Is(err, errStopWalk) || next == before {
			break
		}
	}
	return next, nil
}
