package batch

import (
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge means a batch's length field exceeds the Reader's limit. The
// error also matches ErrCorrupt: no valid input holds such a batch.
var ErrTooLarge = errors.New("batch: batch larger than the limit")

// Reader reads record batches one after another from a stream, a region of
// an io.ReaderAt, or a byte slice. It is the one parser of the 12-byte
// prefix (base offset, length) outside a slice already in memory.
//
// Errors are sticky and leave Pos at the start of the batch that failed:
//   - io.EOF: the input ended exactly at a batch boundary.
//   - ErrShort: the input ends inside a batch (a torn tail); the message
//     says how many bytes of it there are.
//   - ErrCorrupt: a length below the header size, a bad magic, negative
//     counts; ErrTooLarge (which also matches ErrCorrupt) for a length
//     above the limit.
//   - any other error comes from the source.
//
// The Reader never panics, and it never holds more memory than twice the
// bytes it has actually read plus a small constant: a stream's buffer grows
// as bytes arrive, and a region's or slice's length is checked against its
// end before anything is read. The CRC is not checked; pass the bytes Next
// returns to Check or Decode.
type Reader struct {
	stream io.Reader   // set for NewReader
	at     io.ReaderAt // set for NewReaderAt
	mem    []byte      // the input of NewSliceReader
	isMem  bool

	pos   int64 // where the next batch starts, in the source's positions
	end   int64 // where a region or slice ends; unused for a stream
	limit int64 // largest batch accepted, in bytes

	buf []byte // the batch (or header) just read, for stream and region
	err error
}

// maxBatch is the limit when none is given: the length field is an int32.
const maxBatch = LogOverhead + 1<<31 - 1

// NewReader reads batches from a stream. maxSize bounds a whole batch's
// size in bytes; 0 means no bound beyond the length field's range.
func NewReader(r io.Reader, maxSize int) *Reader {
	return &Reader{stream: r, limit: limitOf(maxSize)}
}

// NewReaderAt reads the batches in bytes [off, end) of r, such as a segment
// file up to its size. Positions reported by Pos are positions in r.
func NewReaderAt(r io.ReaderAt, off, end int64, maxSize int) *Reader {
	return &Reader{at: r, pos: off, end: end, limit: limitOf(maxSize)}
}

// NewSliceReader reads the batches in b. The bytes Next returns alias b.
func NewSliceReader(b []byte, maxSize int) *Reader {
	return &Reader{mem: b, isMem: true, end: int64(len(b)), limit: limitOf(maxSize)}
}

func limitOf(maxSize int) int64 {
	if maxSize <= 0 || int64(maxSize) > maxBatch {
		return maxBatch
	}
	return int64(maxSize)
}

// Pos is where the next batch starts, or where the batch that failed
// starts after an error.
func (r *Reader) Pos() int64 { return r.pos }

// Next returns the next whole batch: its header, checked as ReadHeader
// checks it, and its bytes. Unless the Reader reads a slice, the bytes are
// valid only until the next call.
func (r *Reader) Next() (Header, []byte, error) {
	h, raw, err := r.read(true)
	if err != nil {
		r.err = err
		return h, nil, err
	}
	r.pos += int64(h.Size())
	return h, raw, nil
}

// NextHeader returns the header of the next batch and moves past the
// batch without reading its records (from a stream they are read and
// discarded). A batch cut short is still ErrShort.
func (r *Reader) NextHeader() (Header, error) {
	h, _, err := r.read(false)
	if err != nil {
		r.err = err
		return h, err
	}
	r.pos += int64(h.Size())
	return h, nil
}

// read reads the batch at r.pos, the whole of it or only its header,
// without moving r.pos.
func (r *Reader) read(whole bool) (Header, []byte, error) {
	if r.err != nil {
		return Header{}, nil, r.err
	}
	if !r.isStream() {
		switch left := r.end - r.pos; {
		case left <= 0:
			return Header{}, nil, io.EOF
		case left < LogOverhead:
			return Header{}, nil, fmt.Errorf("%w: %d trailing bytes at byte %d", ErrShort, left, r.pos)
		}
	}
	prefix, err := r.bytes(0, LogOverhead)
	if err != nil {
		if len(prefix) == 0 && errors.Is(err, io.EOF) {
			return Header{}, nil, io.EOF
		}
		return Header{}, nil, r.short(err, len(prefix), LogOverhead)
	}
	_, length, err := readPrefix(prefix)
	if err != nil {
		return Header{}, nil, fmt.Errorf("%w (byte %d)", err, r.pos)
	}
	size := LogOverhead + int64(length)
	if size > r.limit {
		return Header{}, nil, fmt.Errorf("%w: %w: %d bytes at byte %d, limit %d", ErrCorrupt, ErrTooLarge, size, r.pos, r.limit)
	}
	if !r.isStream() && size > r.end-r.pos {
		return Header{}, nil, fmt.Errorf("%w: batch of %d bytes at byte %d, %d bytes left", ErrShort, size, r.pos, r.end-r.pos)
	}
	n := size
	if !whole {
		n = HeaderSize
	}
	raw, err := r.bytes(LogOverhead, n)
	if err != nil {
		return Header{}, nil, r.short(err, len(raw), size)
	}
	h, err := parseHeader(raw)
	if err != nil {
		return h, nil, fmt.Errorf("%w (byte %d)", err, r.pos)
	}
	if !whole && r.isStream() {
		if k, err := io.CopyN(io.Discard, r.stream, size-HeaderSize); err != nil {
			return h, nil, r.short(err, int(HeaderSize+k), size)
		}
	}
	return h, raw, nil
}

func (r *Reader) isStream() bool { return r.stream != nil }

// short turns a read that ended early into ErrShort; other errors pass.
func (r *Reader) short(err error, got int, size int64) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %d trailing bytes of a %d-byte batch at byte %d", ErrShort, got, size, r.pos)
	}
	return err
}

// bytes returns the batch's bytes [0, to), having read [from, to) from the
// source; bytes [0, from) were read by the call before. On an early end it
// returns what it has and io.ErrUnexpectedEOF, or io.EOF when a stream
// ended before its first byte.
func (r *Reader) bytes(from, to int64) ([]byte, error) {
	switch {
	case r.isMem:
		have := min(to, r.end-r.pos)
		b := r.mem[r.pos : r.pos+have]
		if have < to {
			return b, io.ErrUnexpectedEOF
		}
		return b, nil
	case r.at != nil:
		r.buf = grow(r.buf[:from], to)
		k, err := r.at.ReadAt(r.buf[from:to], r.pos+from)
		r.buf = r.buf[:from+int64(k)]
		if k == int(to-from) {
			return r.buf, nil
		}
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return r.buf, err
	}
	r.buf = r.buf[:from]
	for int64(len(r.buf)) < to {
		if len(r.buf) == cap(r.buf) {
			// Double at most, so a corrupt length cannot allocate
			// more than the stream actually delivers.
			r.buf = grow(r.buf, min(to, max(2*int64(cap(r.buf)), 512)))
		}
		chunk := r.buf[len(r.buf):min(int64(cap(r.buf)), to)]
		k, err := io.ReadFull(r.stream, chunk)
		r.buf = r.buf[:len(r.buf)+k]
		switch {
		case err == nil:
		case len(r.buf) == 0 && err == io.EOF:
			return r.buf, io.EOF
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return r.buf, io.ErrUnexpectedEOF
		default:
			return r.buf, err
		}
	}
	return r.buf, nil
}

// grow returns b with capacity for n bytes, keeping its contents.
func grow(b []byte, n int64) []byte {
	if int64(cap(b)) >= n {
		return b
	}
	nb := make([]byte, len(b), n)
	copy(nb, b)
	return nb
}
