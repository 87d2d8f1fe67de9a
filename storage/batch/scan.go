package batch

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// Scanner hands out the records of batches one at a time, without ever
// holding all of a batch's records, or a gzipped batch's inflated bytes,
// at once: a gzipped batch of a few MB can hold millions of tiny records,
// and a slice of them all would cost a hundred bytes each. Keep one to
// reuse its inflater and buffers across batches; it is not for concurrent
// use. The zero value is ready.
type Scanner struct {
	src     bytes.Reader
	zr      *gzip.Reader
	br      *bufio.Reader
	record  []byte         // one inflated record
	headers []RecordHeader // the record's headers
}

// Scan is Scanner.Scan on a new Scanner.
func Scan(buf []byte, fn func(Record) error) (Header, error) {
	var s Scanner
	return s.Scan(buf, fn)
}

// Scan checks the batch at the start of buf, CRC included, and calls fn
// with each of its records in order. It reads the whole batch once before
// the first call, so fn sees every record of a batch that decodes and none
// of one that does not: a gzipped batch is inflated twice for that. An
// error from fn ends the scan and is returned as it is.
//
// A record's Key, Value and Headers are valid only during its call: they
// alias buf, or for a gzipped batch a buffer the next record reuses.
// Memory stays a small constant plus the largest record, whatever the
// batch's record count. Errors are those of Decode.
func (s *Scanner) Scan(buf []byte, fn func(Record) error) (Header, error) {
	h, err := Check(buf)
	if err != nil {
		return h, err
	}
	if err := s.pass(buf[HeaderSize:h.Size()], h, nil); err != nil {
		return h, err
	}
	if fn == nil {
		return h, nil
	}
	return h, s.pass(buf[HeaderSize:h.Size()], h, fn)
}

// fnError carries an error from the caller's fn, returned unwrapped.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

// pass reads the h.RecordCount records of body, the records section of
// the batch h, calling fn (if set) with each, and checks nothing follows.
func (s *Scanner) pass(body []byte, h Header, fn func(Record) error) error {
	switch codec := h.Attributes & attrCompressionMask; codec {
	case 0:
		// Every record takes at least 7 bytes, so a count beyond that is
		// corrupt; say so before reading any.
		if int(h.RecordCount) > len(body)/7+1 {
			return fmt.Errorf("%w: %d records cannot fit in %d bytes at offset %d", ErrCorrupt, h.RecordCount, len(body), h.BaseOffset)
		}
		r := reader{buf: body}
		err := s.records(h, func() (Record, error) { return r.record(&s.headers) }, fn)
		if err == nil && len(r.buf) != 0 {
			err = fmt.Errorf("%w: %d trailing bytes in batch at offset %d", ErrCorrupt, len(r.buf), h.BaseOffset)
		}
		return unwrapFn(err)
	case CodecGzip:
		err := s.openGzip(body)
		if err == nil {
			left := int64(maxInflated)
			err = s.records(h, func() (Record, error) { return s.gzipRecord(&left) }, fn)
		}
		if err == nil {
			err = s.gzipEnd()
		}
		switch {
		case err == nil || isFnError(err):
			return unwrapFn(err)
		case errors.Is(err, errInflated):
			return fmt.Errorf("%w: gzip batch at offset %d inflates past %d bytes", ErrCorrupt, h.BaseOffset, maxInflated)
		case errors.Is(err, ErrCorrupt):
			return err
		}
		return fmt.Errorf("%w: gzip batch at offset %d: %v", ErrCorrupt, h.BaseOffset, err)
	default:
		return fmt.Errorf("%w (codec %d at offset %d)", ErrCompressed, codec, h.BaseOffset)
	}
}

// records reads h.RecordCount records with next and hands each to fn.
func (s *Scanner) records(h Header, next func() (Record, error), fn func(Record) error) error {
	for i := int32(0); i < h.RecordCount; i++ {
		rec, err := next()
		if err != nil {
			if errors.Is(err, errInflated) {
				return err
			}
			return fmt.Errorf("%w: record %d of batch at offset %d: %v", ErrCorrupt, i, h.BaseOffset, err)
		}
		if fn != nil {
			if err := fn(rec); err != nil {
				return fnError{err}
			}
		}
	}
	return nil
}

func isFnError(err error) bool {
	var fe fnError
	return errors.As(err, &fe)
}

func unwrapFn(err error) error {
	if fe, ok := err.(fnError); ok {
		return fe.err
	}
	return err
}

// errInflated means a gzipped batch inflates past maxInflated.
var errInflated = errors.New("inflates past the limit")

// openGzip starts inflating body, reusing the inflater and its buffer.
func (s *Scanner) openGzip(body []byte) error {
	s.src.Reset(body)
	if s.zr == nil {
		zr, err := gzip.NewReader(&s.src)
		if err != nil {
			return err
		}
		s.zr = zr
	} else if err := s.zr.Reset(&s.src); err != nil {
		return err
	}
	if s.br == nil {
		s.br = bufio.NewReaderSize(s.zr, 32<<10)
	} else {
		s.br.Reset(s.zr)
	}
	return nil
}

// gzipRecord inflates and decodes the next record, counting its bytes
// against left, the inflated bytes the batch may still take.
func (s *Scanner) gzipRecord(left *int64) (Record, error) {
	size, err := binary.ReadVarint(s.br)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return Record{}, errRecordShort
	case err != nil:
		return Record{}, err
	case size < 1:
		return Record{}, errRecordShort
	}
	if *left -= int64(varintLen(size)) + size; *left < 0 {
		return Record{}, errInflated
	}
	// Grow as bytes arrive, so a corrupt size cannot allocate more than
	// the stream delivers.
	s.record = s.record[:0]
	for int64(len(s.record)) < size {
		if len(s.record) == cap(s.record) {
			s.record = grow(s.record, min(size, max(2*int64(cap(s.record)), 512)))
		}
		k, err := io.ReadFull(s.br, s.record[len(s.record):min(int64(cap(s.record)), size)])
		s.record = s.record[:len(s.record)+k]
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Record{}, errRecordShort
		}
		if err != nil {
			return Record{}, err
		}
	}
	return recordBody(s.record, &s.headers)
}

// gzipEnd checks that the inflated stream ends after the last record;
// reaching its end also checks the gzip trailer's checksum and length.
func (s *Scanner) gzipEnd() error {
	n, err := io.Copy(io.Discard, io.LimitReader(s.br, 1))
	if err != nil {
		return err
	}
	if n != 0 {
		return errors.New("inflated bytes after the last record")
	}
	return nil
}
