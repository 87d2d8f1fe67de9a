package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A control record (in a batch whose attributes have the control bit set)
// has a 4-byte key, int16 key version 0 then int16 control type, and a value
// that is the control message in flexible encoding, starting with the
// message's own int16 ValueVersion field. There is no value frame.
//
// Apache reads every KRaft control value at schema version 0, whatever was
// written, and ignores bytes after it; DecodeControl does the same so that it
// accepts exactly what an Apache node accepts. Writers use version 0 too
// (LeaderChangeMessage has a v1 that nobody writes yet).

// ControlKeySize is the size of a control record key.
const ControlKeySize = 4

var (
	// ErrControlKey: the control record key is shorter than 4 bytes or has
	// a negative key version.
	ErrControlKey = errors.New("metadata: malformed control record key")
	// ErrNotKRaftControl: the control type is not one of KRaft's (2-6).
	// Apache skips such records; callers should too.
	ErrNotKRaftControl = errors.New("metadata: not a KRaft control record type")
)

// AppendControlKey appends the key of a control record of the given type.
func AppendControlKey(dst []byte, controlType int16) []byte {
	dst = binary.BigEndian.AppendUint16(dst, 0)
	return binary.BigEndian.AppendUint16(dst, uint16(controlType))
}

// ParseControlKey returns the control type in a control record key. As in
// Apache, key versions above 0 are read as version 0 and extra bytes are
// ignored.
func ParseControlKey(key []byte) (int16, error) {
	if len(key) < ControlKeySize {
		return 0, fmt.Errorf("%w: %d bytes", ErrControlKey, len(key))
	}
	if version := int16(binary.BigEndian.Uint16(key)); version < 0 {
		return 0, fmt.Errorf("%w: key version %d", ErrControlKey, version)
	}
	return int16(binary.BigEndian.Uint16(key[2:])), nil
}

// EncodeControl returns the key and value of a control record holding v,
// encoded at v's version.
func EncodeControl(v ControlValue) (key, value []byte) {
	return AppendControlKey(nil, v.ControlType()), v.AppendTo(nil)
}

// DecodeControl decodes a KRaft control record. It returns ErrNotKRaftControl
// (wrapped) for control types other than 2-6, and a *DecodeError naming the
// message and field when the value is malformed.
func DecodeControl(key, value []byte) (ControlValue, error) {
	typ, err := ParseControlKey(key)
	if err != nil {
		return nil, err
	}
	v := NewControl(typ)
	if v == nil {
		return nil, fmt.Errorf("%w: type %d", ErrNotKRaftControl, typ)
	}
	v.SetVersion(0)
	if err := v.ReadFrom(value); err != nil {
		return nil, err
	}
	return v, nil
}
