package batch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Builder fields for a new batch. Offsets inside the batch are assigned from
// the record's position: record i gets OffsetDelta i.
type Builder struct {
	BaseOffset  int64
	LeaderEpoch int32
	Timestamp   int64 // append time in ms; base and max timestamp alike
	Control     bool
}

// Encode appends one uncompressed batch holding records to dst, as Apache's
// KRaft BatchBuilder writes it: CREATE_TIME, no producer (-1/-1/-1), record
// attributes 0, timestamp deltas 0, offset delta = position.
func (b Builder) Encode(dst []byte, records []Record) []byte {
	start := len(dst)
	dst = b.appendHeader(dst, len(records), 0)
	dst = appendRecords(dst, records)
	return finishBatch(dst, start)
}

// EncodeSection is Encode for a records section already encoded: count
// records appended with AppendRecord, with offset deltas 0 to count-1. A
// writer of many small records builds it record by record, instead of
// keeping a list of them for Encode to walk and encode again.
func (b Builder) EncodeSection(dst []byte, section []byte, count int) []byte {
	start := len(dst)
	dst = b.appendHeader(dst, count, 0)
	dst = append(dst, section...)
	return finishBatch(dst, start)
}

// AppendRecord appends r to a records section as Encode writes it, with
// r's own OffsetDelta; see EncodeSection.
func AppendRecord(dst []byte, r Record) []byte { return appendRecord(dst, r) }

// appendHeader appends the batch header for count records with the given
// compression codec; finishBatch fills in its length and CRC.
func (b Builder) appendHeader(dst []byte, count int, codec int16) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	hdr := dst[start:]
	binary.BigEndian.PutUint64(hdr[offBaseOffset:], uint64(b.BaseOffset))
	binary.BigEndian.PutUint32(hdr[offLeaderEpoch:], uint32(b.LeaderEpoch))
	hdr[offMagic] = Magic
	attrs := codec
	if b.Control {
		attrs |= AttrControl
	}
	binary.BigEndian.PutUint16(hdr[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(hdr[offLastOffsetDelta:], uint32(max(count-1, 0)))
	binary.BigEndian.PutUint64(hdr[offBaseTimestamp:], uint64(b.Timestamp))
	binary.BigEndian.PutUint64(hdr[offMaxTimestamp:], uint64(b.Timestamp))
	binary.BigEndian.PutUint64(hdr[offProducerID:], ^uint64(0))
	binary.BigEndian.PutUint16(hdr[offProducerEpoch:], ^uint16(0))
	binary.BigEndian.PutUint32(hdr[offBaseSequence:], ^uint32(0))
	binary.BigEndian.PutUint32(hdr[offRecordCount:], uint32(count))
	return dst
}

// appendRecords appends records with offset deltas from 0.
func appendRecords(dst []byte, records []Record) []byte {
	for i, r := range records {
		r.OffsetDelta = int32(i)
		dst = appendRecord(dst, r)
	}
	return dst
}

// finishBatch sets the length and CRC of the batch at dst[start:].
func finishBatch(dst []byte, start int) []byte {
	batch := dst[start:]
	binary.BigEndian.PutUint32(batch[offLength:], uint32(len(batch)-LogOverhead))
	binary.BigEndian.PutUint32(batch[offCRC:], crc32.Checksum(batch[offAttributes:], castagnoli))
	return dst
}

// appendRecord writes r straight into dst: its length prefix is computed
// first, so that encoding a snapshot's million records allocates nothing.
func appendRecord(dst []byte, r Record) []byte {
	dst = binary.AppendVarint(dst, int64(recordBodySize(r)))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendVarBytes(dst, r.Key)
	dst = appendVarBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendVarBytes(dst, h.Value)
	}
	return dst
}

// RecordSize is the encoded size of r in a batch, its length prefix
// included.
func RecordSize(r Record) int {
	body := recordBodySize(r)
	return varintLen(int64(body)) + body
}

func recordBodySize(r Record) int {
	body := 1 + varintLen(r.TimestampDelta) + varintLen(int64(r.OffsetDelta)) +
		varBytesLen(r.Key) + varBytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		body += varintLen(int64(len(h.Key))) + len(h.Key) + varBytesLen(h.Value)
	}
	return body
}

// varintLen is the size of v as a zigzag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func varBytesLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

func appendVarBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// reader decodes the records section of a batch.
type reader struct{ buf []byte }

var errRecordShort = errors.New("record runs past the batch end")

func (r *reader) varint() (int64, error) {
	v, n := binary.Varint(r.buf)
	if n <= 0 {
		return 0, errRecordShort
	}
	r.buf = r.buf[n:]
	return v, nil
}

func (r *reader) bytes() ([]byte, error) {
	n, err := r.varint()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, nil
	}
	if n > int64(len(r.buf)) {
		return nil, errRecordShort
	}
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	return b, nil
}

// record decodes the next record; its Headers reuse *headers.
func (r *reader) record(headers *[]RecordHeader) (Record, error) {
	size, err := r.varint()
	if err != nil {
		return Record{}, err
	}
	if size < 1 || size > int64(len(r.buf)) {
		return Record{}, errRecordShort
	}
	body := r.buf[:size]
	r.buf = r.buf[size:]
	return recordBody(body, headers)
}

// recordBody decodes a record's bytes after its length prefix. Key, Value
// and the headers' values alias b; Headers reuse *headers.
func recordBody(b []byte, headers *[]RecordHeader) (Record, error) {
	var rec Record
	var err error
	body := reader{buf: b}
	rec.Attributes = int8(body.buf[0])
	body.buf = body.buf[1:]
	if rec.TimestampDelta, err = body.varint(); err != nil {
		return rec, err
	}
	od, err := body.varint()
	if err != nil {
		return rec, err
	}
	rec.OffsetDelta = int32(od)
	if rec.Key, err = body.bytes(); err != nil {
		return rec, err
	}
	if rec.Value, err = body.bytes(); err != nil {
		return rec, err
	}
	nh, err := body.varint()
	if err != nil {
		return rec, err
	}
	if nh < 0 || nh > int64(len(body.buf)) {
		return rec, errors.New("bad header count")
	}
	hs := (*headers)[:0]
	for i := int64(0); i < nh; i++ {
		k, err := body.bytes()
		if err != nil {
			return rec, err
		}
		v, err := body.bytes()
		if err != nil {
			return rec, err
		}
		hs = append(hs, RecordHeader{Key: string(k), Value: v})
	}
	if len(hs) > 0 {
		rec.Headers, *headers = hs, hs
	}
	if len(body.buf) != 0 {
		return rec, errors.New("trailing bytes in record")
	}
	return rec, nil
}
