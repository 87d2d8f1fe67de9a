// Package batch encodes and decodes Kafka RecordBatch v2 (magic 2), the unit
// of the __cluster_metadata log on disk and in Fetch responses.
//
// It opens no files or sockets: it decodes byte slices, and Reader reads
// batches one after another from whatever io.Reader or io.ReaderAt its
// caller hands it (a segment, a snapshot, a fetched slice). Reader is the
// one place the 12-byte batch prefix is parsed from a stream. Every decoder
// checks lengths before reading and returns an error, never panics, on
// short or corrupt input. Apache's KRaft writes its metadata log and
// snapshots uncompressed; kraftd may gzip a snapshot's data batches
// (Compressor), so Scanner and Decode read gzip, within a bound on the
// inflated size, and refuse other codecs (ErrCompressed).
//
// A Scanner hands out one record at a time and is what every reader of
// stored or fetched batches uses: it must never hold all of a batch's
// records, or a gzipped batch's inflated bytes, at once, because a few MB
// of gzip can hold millions of tiny records. Decode, which keeps them all,
// is for batches known to be small.
package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// Layout of the fixed 61-byte batch header (offsets from the batch start).
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// HeaderSize is the size of the batch header before the first record.
	HeaderSize = 61
	// LogOverhead is the part of the header not counted by the Length field.
	LogOverhead = 12

	// Magic is the only record batch format kraftd reads or writes.
	Magic = 2

	// AttrControl marks a control batch (LeaderChange, snapshot header...).
	AttrControl int16 = 1 << 5
	// AttrTransactional marks a transactional batch; never set in KRaft.
	AttrTransactional   int16 = 1 << 4
	attrCompressionMask int16 = 0x7
)

var (
	// ErrShort means buf ends inside a batch. In a Fetch response or at the
	// tail of a segment this is a partial batch, not corruption.
	ErrShort = errors.New("batch: truncated batch")
	// ErrCorrupt means the bytes cannot be a valid batch (bad length, magic or CRC).
	ErrCorrupt = errors.New("batch: corrupt batch")
	// ErrCompressed means the batch uses a compression codec kraftd does
	// not read (any but gzip).
	ErrCompressed = errors.New("batch: compression codec not supported")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the fixed part of a batch.
type Header struct {
	BaseOffset           int64
	Length               int32 // bytes after the Length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the whole batch's size in bytes.
func (h *Header) Size() int { return int(h.Length) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset just after the batch.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

// IsControl reports whether the batch holds control records.
func (h *Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// Record is one record inside a batch. A nil Key or Value is encoded as null.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []RecordHeader
}

// RecordHeader is a record's key/value header (the metadata log writes none).
type RecordHeader struct {
	Key   string
	Value []byte
}

// Batch is a decoded batch: its header and records.
type Batch struct {
	Header
	Records []Record
}

// ReadHeader decodes and sanity-checks the header of the batch at the start
// of buf without checking the CRC. It returns ErrShort when buf holds less
// than the whole batch.
func ReadHeader(buf []byte) (Header, error) {
	h, err := parseHeader(buf)
	if err == nil && len(buf) < h.Size() {
		err = ErrShort
	}
	return h, err
}

// readPrefix decodes the 12 bytes every batch starts with, base offset and
// length, and refuses a length too small for the header. It is the only
// parser of that prefix; ReadHeader and Reader both use it.
func readPrefix(buf []byte) (base int64, length int32, err error) {
	if len(buf) < LogOverhead {
		return 0, 0, ErrShort
	}
	base = int64(binary.BigEndian.Uint64(buf[offBaseOffset:]))
	length = int32(binary.BigEndian.Uint32(buf[offLength:]))
	if length < HeaderSize-LogOverhead {
		return base, length, fmt.Errorf("%w: length %d at offset %d is below the header size", ErrCorrupt, length, base)
	}
	return base, length, nil
}

// parseHeader decodes the fixed header at the start of buf, which must hold
// at least HeaderSize bytes but need not hold the records.
func parseHeader(buf []byte) (Header, error) {
	var h Header
	var err error
	if h.BaseOffset, h.Length, err = readPrefix(buf); err != nil {
		return h, err
	}
	if len(buf) < HeaderSize {
		return h, ErrShort
	}
	h.Magic = int8(buf[offMagic])
	if h.Magic != Magic {
		return h, fmt.Errorf("%w: magic %d at offset %d, want %d", ErrCorrupt, h.Magic, h.BaseOffset, Magic)
	}
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(buf[offLeaderEpoch:]))
	h.CRC = binary.BigEndian.Uint32(buf[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(buf[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(buf[offLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(buf[offBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(buf[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(buf[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(buf[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(buf[offBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(buf[offRecordCount:]))
	if h.LastOffsetDelta < 0 || h.RecordCount < 0 {
		return h, fmt.Errorf("%w: negative offset delta or record count at offset %d", ErrCorrupt, h.BaseOffset)
	}
	return h, nil
}

// Codec names the batch's compression codec as Apache's tools print it:
// none, gzip, snappy, lz4 or zstd.
func (h Header) Codec() string {
	switch c := h.Attributes & attrCompressionMask; c {
	case 0:
		return "none"
	case CodecGzip:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	default:
		return fmt.Sprintf("codec %d", c)
	}
}

// Check validates the batch at the start of buf, CRC included, and returns
// its header. Use it on untrusted bytes before keeping them.
func Check(buf []byte) (Header, error) {
	h, err := ReadHeader(buf)
	if err != nil {
		return h, err
	}
	if got := crc32.Checksum(buf[offAttributes:h.Size()], castagnoli); got != h.CRC {
		return h, fmt.Errorf("%w: crc %08x at offset %d, stored %08x", ErrCorrupt, got, h.BaseOffset, h.CRC)
	}
	return h, nil
}

// Decode validates and fully decodes the batch at the start of buf, as
// Scan reads it, and keeps every record: the records' Key and Value alias
// buf, or for a gzipped batch are copies. A record costs about a hundred
// bytes here however small it is, so Decode is for batches known to be
// small (tests, tools); readers of the log, of snapshots and of fetched
// records use a Scanner.
func Decode(buf []byte) (Batch, error) {
	var s Scanner
	var recs []Record
	gzipped := len(buf) > offAttributes+1 && int16(binary.BigEndian.Uint16(buf[offAttributes:]))&attrCompressionMask == CodecGzip
	h, err := s.Scan(buf, func(r Record) error {
		if gzipped { // r aliases the Scanner's buffer
			r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
			for i := range r.Headers {
				r.Headers[i].Value = bytes.Clone(r.Headers[i].Value)
			}
		}
		r.Headers = slices.Clone(r.Headers)
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return Batch{Header: h}, err
	}
	return Batch{Header: h, Records: recs}, nil
}

// Walk calls fn for each whole batch at the start of buf, in order, after
// checking its CRC. It stops at the first partial batch and returns the
// number of bytes consumed; corruption is returned as an error.
func Walk(buf []byte, fn func(h Header, raw []byte) error) (int, error) {
	pos := 0
	for pos < len(buf) {
		h, err := Check(buf[pos:])
		if errors.Is(err, ErrShort) {
			return pos, nil
		}
		if err != nil {
			return pos, err
		}
		if err := fn(h, buf[pos:pos+h.Size()]); err != nil {
			return pos, err
		}
		pos += h.Size()
	}
	return pos, nil
}

// SetBaseOffset rewrites the base offset of an encoded batch in place. The
// CRC does not cover it, so the batch stays valid.
func SetBaseOffset(raw []byte, off int64) {
	binary.BigEndian.PutUint64(raw[offBaseOffset:], uint64(off))
}

// SetLeaderEpoch rewrites the partition leader epoch of an encoded batch in
// place. The CRC does not cover it either.
func SetLeaderEpoch(raw []byte, epoch int32) {
	binary.BigEndian.PutUint32(raw[offLeaderEpoch:], uint32(epoch))
}
