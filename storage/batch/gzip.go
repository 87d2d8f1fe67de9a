package batch

import (
	"github.com/klauspost/compress/gzip"
)

// CodecGzip is the attributes' compression codec for gzip, the one codec
// kraftd writes (in snapshots, when asked) and reads. Java reads it with
// the JDK's own inflater, so every Apache release can load such a batch
// without a native library.
const CodecGzip int16 = 1

// maxInflated bounds the records section of one compressed batch once
// inflated. kraftd closes a snapshot batch at 8 MiB before compressing;
// anything inflating past this is refused as corrupt. A Scanner never
// holds the inflated bytes, only one record of them; the bound is on the
// work a batch can ask for and on its largest record.
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
	c.raw = appendRecords(c.raw[:0], records)
	return c.EncodeSection(dst, b, c.raw, len(records))
}

// EncodeSection is Encode for a records section already encoded, as
// Builder.EncodeSection takes it.
func (c *Compressor) EncodeSection(dst []byte, b Builder, section []byte, count int) []byte {
	start := len(dst)
	dst = b.appendHeader(dst, count, CodecGzip)
	c.out.buf = dst
	if c.zw == nil {
		c.zw, _ = gzip.NewWriterLevel(&c.out, gzip.BestSpeed) // the level is valid
	} else {
		c.zw.Reset(&c.out)
	}
	// Writes to an appender cannot fail.
	_, _ = c.zw.Write(section)
	_ = c.zw.Close()
	dst, c.out.buf = c.out.buf, nil
	return finishBatch(dst, start)
}
