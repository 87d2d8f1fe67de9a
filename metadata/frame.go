package metadata

import (
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The value of every data record in the metadata log (and in snapshots and
// bootstrap.checkpoint) is a small frame around the record body:
//
//	uvarint frame version (always 1)
//	uvarint apiKey
//	uvarint record version
//	body, flexible encoding at that version
//
// The record key is null. Apache refuses frame version 0 (the 2.8 preview
// format) and any other frame version, values above 32767, unknown keys,
// versions it has no schema for, and bytes after the body; so does
// DecodeValue.

// FrameVersion is the only value frame version Apache writes and accepts.
const FrameVersion = 1

var (
	// ErrFrameVersion: the value frame is not version 1.
	ErrFrameVersion = errors.New("metadata: unsupported value frame version")
	// ErrUnknownRecord: the apiKey names no record this package knows.
	ErrUnknownRecord = errors.New("metadata: unknown record apiKey")
	// ErrTrailingBytes: bytes follow the record body.
	ErrTrailingBytes = errors.New("trailing bytes after the record")
)

// EncodeValue returns the framed value of r: frame version, apiKey and
// version as uvarints, then the body at r's version.
func EncodeValue(r Record) []byte {
	return AppendValue(nil, r)
}

// AppendValue appends the framed value of r to dst.
func AppendValue(dst []byte, r Record) []byte {
	dst = kbin.AppendUvarint(dst, FrameVersion)
	dst = kbin.AppendUvarint(dst, uint32(uint16(r.Key())))
	dst = kbin.AppendUvarint(dst, uint32(uint16(r.GetVersion())))
	return r.AppendTo(dst)
}

// bodyReader is implemented by every generated record: ReadFrom that also
// reports the bytes left over.
type bodyReader interface {
	readBody(src []byte) (int, error)
}

// DecodeValue decodes a framed metadata record value. Errors from the body
// are *DecodeError values naming the record and field.
func DecodeValue(b []byte) (Record, error) {
	r := reader{src: b}
	r.at("frame version")
	frame := r.uvarint()
	r.at("apiKey")
	key := r.uvarint()
	r.at("version")
	version := r.uvarint()
	if r.err != nil {
		return nil, fmt.Errorf("metadata: value frame: field %s: %w", r.errPath, r.err)
	}
	if frame != FrameVersion {
		return nil, fmt.Errorf("%w %d (want %d)", ErrFrameVersion, frame, FrameVersion)
	}
	if key > math.MaxInt16 {
		return nil, fmt.Errorf("%w %d", ErrUnknownRecord, key)
	}
	rec := NewRecord(int16(key))
	if rec == nil {
		return nil, fmt.Errorf("%w %d", ErrUnknownRecord, key)
	}
	if version > uint32(rec.MaxVersion()) {
		return nil, &DecodeError{Record: RecordName(int16(key)), Version: int16(min(version, math.MaxInt16)), Err: ErrUnsupportedVersion}
	}
	rec.SetVersion(int16(version))
	left, err := rec.(bodyReader).readBody(r.src)
	if err != nil {
		return nil, err
	}
	if left != 0 {
		return nil, &DecodeError{Record: RecordName(int16(key)), Version: int16(version),
			Err: fmt.Errorf("%w: %d", ErrTrailingBytes, left)}
	}
	return rec, nil
}
