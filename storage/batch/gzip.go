package batch

import (
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// CodecGzip is the attributes' compression codec for gzip, the one codec
// kraftd writes (in snapshots, when asked) and reads. Java reads it with
// the JDK's own inflater, so every Apache release can load such a batch
// without a native library.
const CodecGzip int16 = 1

// maxInflated bounds the records section of one compressed batch once
// inflated. kraftd closes a snapshot batch at 8 MiB before compressing;
// anything inflating past this is refused as corrupt rather than allowed
// to take the memory it claims.
const maxInflated = 64 << 20

// Compressor encodes batches whose records are gzipped. Keep one to reuse
// its buffers and deflater; it is not for concurrent use.
type Compressor struct {
	raw []byte
	zw  *gzip.Writer
	out appender
}

// appender is an io.Writer appending to a slice.
type appender struct{ buf []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.buf = append(a.buf, p...)
	return len(p), nil
}

// Encode appends one batch holding records to dst, as b.Encode does, but
// with the records section gzipped at the fastest level (codec 1 in the
// attributes).
func (c *Compressor) Encode(dst []byte, b Builder, records []Record) []byte {
	start := len(dst)
	dst = b.appendHeader(dst, len(records), CodecGzip)
	c.raw = appendRecords(c.raw[:0], records)
	c.out.buf = dst
	if c.zw == nil {
		c.zw, _ = gzip.NewWriterLevel(&c.out, gzip.BestSpeed) // the level is valid
	} else {
		c.zw.Reset(&c.out)
	}
	// Writes to an appender cannot fail.
	_, _ = c.zw.Write(c.raw)
	_ = c.zw.Close()
	dst, c.out.buf = c.out.buf, nil
	return finishBatch(dst, start)
}

// inflate returns the records section of a gzipped batch, refusing one
// that inflates past maxInflated.
func inflate(body []byte, h Header) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: gzip batch at offset %d: %v", ErrCorrupt, h.BaseOffset, err)
	}
	defer zr.Close()
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(zr, maxInflated+1))
	if err != nil {
		return nil, fmt.Errorf("%w: gzip batch at offset %d: %v", ErrCorrupt, h.BaseOffset, err)
	}
	if n > maxInflated {
		return nil, fmt.Errorf("%w: gzip batch at offset %d inflates past %d bytes", ErrCorrupt, h.BaseOffset, maxInflated)
	}
	return out.Bytes(), nil
}
