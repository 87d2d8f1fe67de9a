package compat

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestStream sends req and hands the body of its response (after the
// response header) to read, as a reader that ends where the frame ends;
// read must consume all of it. It is for answers a test drops rather than
// holds, such as snapshot chunks: the bytes pass through a small buffer
// instead of a frame-sized one, so a benchmark's many observers cost its
// own process little CPU and memory beside the controllers it measures.
// After an error the connection is out of step: close it.
func (c *Conn) RequestStream(ctx context.Context, req kmsg.Request, read func(*StreamReader) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	corr, err := c.send(ctx, req)
	if err != nil {
		return err
	}
	name := kmsg.NameForKey(req.Key())
	n, err := readFrameSize(c.nc)
	if err != nil {
		return errorf("read %s response: %w", name, err)
	}
	frame := &io.LimitedReader{R: c.nc, N: int64(n)}
	r := NewStreamReader(frame)
	if got := r.Int32(); r.err == nil && got != corr {
		return errorf("%s response: correlation id %d, want %d", name, got, corr)
	}
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		r.SkipTags()
	}
	if err := read(r); err != nil {
		return errorf("%s response: %w", name, err)
	}
	if r.err != nil {
		return errorf("%s response: %w", name, r.err)
	}
	if left := frame.N + int64(r.r.Buffered()); left != 0 {
		return errorf("%s response: %d bytes left undecoded", name, left)
	}
	return nil
}

// StreamReader reads Kafka's primitive types from a response in flight.
// The first error sticks: later reads return zero values, and Err reports it.
type StreamReader struct {
	r   *bufio.Reader
	err error
}

// NewStreamReader reads from r through a 64 KiB buffer.
func NewStreamReader(r io.Reader) *StreamReader {
	return &StreamReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Err is the first error a read met, io.ErrUnexpectedEOF for a cut-short
// frame.
func (s *StreamReader) Err() error { return s.err }

func (s *StreamReader) fixed(n int) []byte {
	if s.err != nil {
		return make([]byte, n)
	}
	b, err := s.r.Peek(n)
	if err != nil {
		s.fail(err)
		return make([]byte, n)
	}
	s.r.Discard(n)
	return b
}

func (s *StreamReader) fail(err error) {
	if s.err == nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		s.err = err
	}
}

// Int16, Int32 and Int64 read big-endian integers.
func (s *StreamReader) Int16() int16 { return int16(binary.BigEndian.Uint16(s.fixed(2))) }
func (s *StreamReader) Int32() int32 { return int32(binary.BigEndian.Uint32(s.fixed(4))) }
func (s *StreamReader) Int64() int64 { return int64(binary.BigEndian.Uint64(s.fixed(8))) }

// Uvarint reads an unsigned varint of at most 32 bits, as Kafka's compact
// lengths and tags are.
func (s *StreamReader) Uvarint() uint32 {
	if s.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(s.r)
	if err == nil && v > 1<<32-1 {
		err = errorf("varint %d overflows 32 bits", v)
	}
	if err != nil {
		s.fail(err)
		return 0
	}
	return uint32(v)
}

// Skip drops n bytes.
func (s *StreamReader) Skip(n int64) {
	if s.err != nil {
		return
	}
	if n < 0 {
		s.fail(errorf("negative length %d", n))
		return
	}
	for n > 0 {
		k := int(min(n, 1<<30))
		d, err := s.r.Discard(k)
		n -= int64(d)
		if err != nil {
			s.fail(err)
			return
		}
	}
}

// CompactLength reads a compact array, string or bytes length (uvarint of
// length+1); -1 is null.
func (s *StreamReader) CompactLength() int64 { return int64(s.Uvarint()) - 1 }

// SkipCompact drops a compact string or bytes field and returns its
// length, -1 for null.
func (s *StreamReader) SkipCompact() int64 {
	n := s.CompactLength()
	s.Skip(max(n, 0))
	return n
}

// SkipTags drops a tagged-field section.
func (s *StreamReader) SkipTags() {
	for range s.Uvarint() {
		if s.err != nil {
			return
		}
		s.Uvarint() // tag
		s.Skip(int64(s.Uvarint()))
	}
}
