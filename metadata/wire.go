package metadata

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/kraftd/kraftd/storage/uuid"
)

// This file holds the hand-written primitives the generated code in
// records_generated.go is built on: the decoder with its sticky error and
// field path, tagged-field handling, and the error types.

// Errors a decoder wraps in a *DecodeError, so callers can test with
// errors.Is.
var (
	// ErrNotEnoughData: the input ended, or a length prefix claims more
	// bytes than remain.
	ErrNotEnoughData = errors.New("not enough data")
	// ErrBadVarint: an unsigned varint is longer than 5 bytes or overflows
	// 32 bits.
	ErrBadVarint = errors.New("malformed varint")
	// ErrUnexpectedNull: a null length on a field that is not nullable.
	ErrUnexpectedNull = errors.New("null in a non-nullable field")
	// ErrTagLength: a known tagged field's content does not fill exactly the
	// size its header announced.
	ErrTagLength = errors.New("tagged field size does not match its content")
	// ErrUnsupportedVersion: a version this package has no schema for.
	ErrUnsupportedVersion = errors.New("unsupported version")
)

// DecodeError says which record, at which version, failed to decode at which
// field. Field is a dotted path into nested structs, e.g. "EndPoints.Host".
type DecodeError struct {
	Record  string
	Version int16
	Field   string
	Err     error
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("metadata: %s v%d: %v", e.Record, e.Version, e.Err)
	}
	return fmt.Sprintf("metadata: %s v%d: field %s: %v", e.Record, e.Version, e.Field, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Uuid is Kafka's 128-bit id (topic ids, directory ids, incarnation ids).
// It is the same type as uuid.UUID, under the name Kafka's schemas and the
// generated records use; its String is Kafka's URL-safe base64 without
// padding.
type Uuid = uuid.UUID

// TaggedField is a tagged field this package has no schema for (or one not
// valid at the record's version). Decoding keeps it and encoding writes it
// back, so records from newer peers survive a round trip.
type TaggedField struct {
	Tag  uint32
	Data []byte
}

// Tags holds unknown tagged fields in ascending tag order.
type Tags []TaggedField

func (t Tags) String() string {
	parts := make([]string, len(t))
	for i, f := range t {
		parts[i] = fmt.Sprintf("%d:%s", f.Tag, hex.EncodeToString(f.Data))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// appendBefore writes the unknown fields from index i on whose tag is below
// limit, and returns the index of the first one not written. Kafka writes a
// tag section in ascending tag order, with unknown fields interleaved among
// the known ones; doing the same keeps re-encoding byte for byte.
func (t Tags) appendBefore(dst []byte, i int, limit uint32) ([]byte, int) {
	j := i
	for j < len(t) && t[j].Tag < limit {
		j++
	}
	return t[:j].appendRest(dst, i), j
}

// appendRest writes the unknown fields from index i on.
func (t Tags) appendRest(dst []byte, i int) []byte {
	for ; i < len(t); i++ {
		dst = kbin.AppendUvarint(dst, t[i].Tag)
		dst = kbin.AppendUvarint(dst, uint32(len(t[i].Data)))
		dst = append(dst, t[i].Data...)
	}
	return dst
}

// sortTags puts decoded unknown fields in tag order so a re-encode is
// canonical even when the input was not.
func sortTags(t Tags) {
	if !slices.IsSortedFunc(t, compareTags) {
		slices.SortStableFunc(t, compareTags)
	}
}

func compareTags(a, b TaggedField) int {
	switch {
	case a.Tag < b.Tag:
		return -1
	case a.Tag > b.Tag:
		return 1
	}
	return 0
}

// closeTagged finishes a known tagged field whose content was appended
// starting at mark: it inserts the content's length as a uvarint at mark.
// Appending first and shifting afterwards avoids a scratch buffer.
func closeTagged(dst []byte, mark int) []byte {
	n := len(dst) - mark
	l := kbin.UvarintLen(uint32(n))
	dst = append(dst, make([]byte, l)...)
	copy(dst[mark+l:], dst[mark:mark+n])
	kbin.AppendUvarint(dst[mark:mark], uint32(n))
	return dst
}

// maxFieldDepth bounds struct nesting; the generator refuses deeper
// definitions.
const maxFieldDepth = 8

// reader decodes flexible-version primitives with a sticky error: after the
// first failure every read returns a zero value and consumes nothing, so the
// generated code checks once at the end. Before each field the generated
// code names it with at; on failure the reader keeps the field path, which
// ends up in the DecodeError.
type reader struct {
	src     []byte
	err     error
	errPath string
	path    [maxFieldDepth]string
	depth   int
}

func (r *reader) at(field string) { r.path[r.depth] = field }
func (r *reader) enter()          { r.depth++ }
func (r *reader) leave()          { r.depth-- }

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
		r.errPath = strings.Join(r.path[:r.depth+1], ".")
	}
	r.src = nil
}

// finish turns the sticky error into a *DecodeError for the named record.
func (r *reader) finish(record string, version int16) error {
	if r.err == nil {
		return nil
	}
	return &DecodeError{Record: record, Version: version, Field: r.errPath, Err: r.err}
}

func (r *reader) span(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.src) {
		r.fail(ErrNotEnoughData)
		return nil
	}
	b := r.src[:n:n]
	r.src = r.src[n:]
	return b
}

func (r *reader) bool() bool {
	b := r.span(1)
	return b != nil && b[0] != 0
}

func (r *reader) int8() int8 {
	if b := r.span(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *reader) uint16() uint16 {
	if b := r.span(2); b != nil {
		return uint16(b[0])<<8 | uint16(b[1])
	}
	return 0
}

func (r *reader) int16() int16 { return int16(r.uint16()) }

func (r *reader) uint32() uint32 {
	if b := r.span(4); b != nil {
		return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	}
	return 0
}

func (r *reader) int32() int32 { return int32(r.uint32()) }

func (r *reader) int64() int64 { return int64(uint64(r.uint32())<<32 | uint64(r.uint32())) }

func (r *reader) float64() float64 { return math.Float64frombits(uint64(r.int64())) }

func (r *reader) uuid() (u Uuid) {
	copy(u[:], r.span(16))
	return u
}

func (r *reader) uvarint() uint32 {
	if r.err != nil {
		return 0
	}
	v, n := kbin.Uvarint(r.src)
	switch {
	case n > 0:
		r.src = r.src[n:]
		return v
	case n == 0:
		r.fail(ErrNotEnoughData)
	default:
		r.fail(ErrBadVarint)
	}
	return 0
}

// compactLen reads a compact length (stored plus one, zero for null). isNull
// reports a null; a null where nullable is false is an error. A length longer
// than the remaining input times minSize is an error before anything is
// allocated, so a hostile prefix cannot make the decoder allocate more than
// the input justifies.
func (r *reader) compactLen(nullable bool, minSize int) (n int, isNull bool) {
	u := r.uvarint()
	if r.err != nil {
		return 0, true
	}
	if u == 0 {
		if !nullable {
			r.fail(ErrUnexpectedNull)
		}
		return 0, true
	}
	n64 := uint64(u - 1)
	if n64*uint64(minSize) > uint64(len(r.src)) {
		r.fail(ErrNotEnoughData)
		return 0, true
	}
	return int(n64), false
}

func (r *reader) compactString() string {
	n, isNull := r.compactLen(false, 1)
	if isNull {
		return ""
	}
	return string(r.span(n))
}

func (r *reader) compactNullableString() *string {
	n, isNull := r.compactLen(true, 1)
	if isNull {
		return nil
	}
	s := string(r.span(n))
	return &s
}

func (r *reader) compactBytes() []byte {
	n, isNull := r.compactLen(false, 1)
	if isNull {
		return nil
	}
	return slices.Clone(r.span(n))
}

func (r *reader) compactNullableBytes() []byte {
	n, isNull := r.compactLen(true, 1)
	if isNull {
		return nil
	}
	return append([]byte{}, r.span(n)...)
}

// arrayLen reads a compact array length; ok is false for null or on error.
func (r *reader) arrayLen(nullable bool, minElemSize int) (n int, ok bool) {
	n, isNull := r.compactLen(nullable, minElemSize)
	return n, !isNull
}

// taggedField reads one entry header of a tag section and its content.
func (r *reader) taggedField() (tag uint32, data []byte) {
	tag = r.uvarint()
	size := r.uvarint()
	if uint64(size) > uint64(len(r.src)) {
		r.fail(ErrNotEnoughData)
		return 0, nil
	}
	return tag, r.span(int(size))
}

// beginTagged makes the reader read only data, a known tagged field's
// content; endTagged checks it was used up exactly and restores the rest.
func (r *reader) beginTagged(data []byte) (rest []byte) {
	rest = r.src
	if r.err == nil {
		r.src = data
	}
	return rest
}

func (r *reader) endTagged(rest []byte) {
	if r.err != nil {
		return
	}
	if len(r.src) != 0 {
		r.fail(ErrTagLength)
		return
	}
	r.src = rest
}

// unknownTag keeps an unknown tagged field, copying it so the record does not
// hold on to the input buffer.
func unknownTag(t Tags, tag uint32, data []byte) Tags {
	return append(t, TaggedField{Tag: tag, Data: slices.Clone(data)})
}
