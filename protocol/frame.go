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

// ReadFrame reads one size-prefixed frame from r. It never allocates more
// than maxSize bytes for a frame, whatever the prefix claims.
func ReadFrame(r io.Reader, maxSize int32) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if err := CheckFrameSize(n, maxSize); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, describePrefix(size))
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(r, frame); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return frame, nil
}

// CheckFrameSize applies Apache's rule for the 4-byte size prefix.
func CheckFrameSize(n, maxSize int32) error {
	if n < 0 {
		return fmt.Errorf("%w: %d is negative", ErrFrameSize, n)
	}
	if n > maxSize {
		return fmt.Errorf("%w: %d is larger than %d", ErrFrameSize, n, maxSize)
	}
	return nil
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
