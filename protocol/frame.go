package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxFrameSize is Apache's socket.request.max.bytes default (100 MiB).
const DefaultMaxFrameSize = 100 * 1024 * 1024

// ErrFrameSize is returned for a negative or oversized frame size. Apache
// closes the connection in both cases (InvalidReceiveException).
var ErrFrameSize = errors.New("protocol: invalid frame size")

// FrameSizeError is a size prefix that ReadFrameSize refused. It matches
// ErrFrameSize with errors.Is; its fields let a caller name its own limit.
type FrameSizeError struct {
	Size, Max int32
	// Hint names the likely sender of bytes that are not a Kafka frame
	// ("looks like HTTP"), or shows the prefix's bytes.
	Hint string
}

func (e *FrameSizeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%v: %d is negative (%s)", ErrFrameSize, e.Size, e.Hint)
	}
	return fmt.Sprintf("%v: frame of %d bytes exceeds %d (%s)", ErrFrameSize, e.Size, e.Max, e.Hint)
}

func (e *FrameSizeError) Is(target error) bool { return target == ErrFrameSize }

// ReadFrame reads one size-prefixed frame from r. It never allocates more
// than maxSize bytes for a frame, whatever the prefix claims.
func ReadFrame(r io.Reader, maxSize int32) ([]byte, error) {
	n, err := ReadFrameSize(r, maxSize)
	if err != nil {
		return nil, err
	}
	return ReadFrameBody(r, n)
}

// ReadFrameSize reads the 4-byte size prefix of the next frame. A size that
// is negative or above maxSize is a *FrameSizeError. A caller that must
// account for the frame's memory (the server) does so between this and
// ReadFrameBody, before anything is allocated.
func ReadFrameSize(r io.Reader, maxSize int32) (int32, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxSize {
		return 0, &FrameSizeError{Size: n, Max: maxSize, Hint: describePrefix(size)}
	}
	return n, nil
}

// ReadFrameBody reads the n bytes that follow a size prefix.
func ReadFrameBody(r io.Reader, n int32) ([]byte, error) {
	frame := make([]byte, n)
	if _, err := io.ReadFull(r, frame); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return frame, nil
}

// describePrefix names the likely sender of bytes that are not a Kafka frame,
// so that an operator reading the log sees "TLS" rather than a huge number.
func describePrefix(p [4]byte) string {
	switch {
	case p[0] == 0x16 && p[1] == 0x03:
		return "looks like a TLS handshake on a plaintext listener"
	case string(p[:]) == "GET " || string(p[:]) == "POST" || string(p[:]) == "PUT " || string(p[:]) == "HEAD":
		return "looks like HTTP"
	default:
		return fmt.Sprintf("prefix % x", p[:])
	}
}

// AppendFrame appends the 4-byte size prefix of payload and payload itself.
func AppendFrame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}
