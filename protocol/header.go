package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersionsKey is special-cased throughout the protocol: its response header
// is always v0, and a request at an unknown newer version is still answered.
const ApiVersionsKey int16 = 18

var (
	// ErrUnknownKey is an API key Kafka does not define. Apache closes the connection.
	ErrUnknownKey = errors.New("protocol: unknown API key")
	// ErrBadHeader is a request header that cannot be parsed.
	ErrBadHeader = errors.New("protocol: malformed request header")
)

// RequestHeader is a parsed request header (v1 or v2).
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      string // Apache treats a null client id as empty
	Flexible      bool   // header v2: the request version is flexible
}

// ParseRequestHeader parses the header at the start of a frame and returns it
// with the remaining body bytes. The header version follows from the key and
// version, as in Apache's RequestHeader.parse: v2 for flexible versions.
func ParseRequestHeader(frame []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(frame) < 8 {
		return h, nil, fmt.Errorf("%w: %d bytes, need at least 8", ErrBadHeader, len(frame))
	}
	h.Key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return h, nil, fmt.Errorf("%w %d", ErrUnknownKey, h.Key)
	}
	h.Flexible = isFlexible(req, h.Version)
	r := kbin.Reader{Src: frame[8:]}
	if id := r.NullableString(); id != nil {
		h.ClientID = *id
	}
	if h.Flexible {
		skipTags(&r)
	}
	if err := r.Complete(); err != nil {
		// kbin's error is worded for responses; say what ran short.
		return h, nil, fmt.Errorf("%w: key %d version %d: the client id or tagged fields run past the end of the frame", ErrBadHeader, h.Key, h.Version)
	}
	return h, r.Src, nil
}

// isFlexible reports whether req at version uses the flexible encoding. For
// ApiVersions above the versions kmsg knows, the flexible header still applies
// (all versions from 3 on are flexible).
func isFlexible(req kmsg.Request, version int16) bool {
	if req.Key() == ApiVersionsKey && version >= 3 {
		return true
	}
	req.SetVersion(version)
	return req.IsFlexible()
}

func skipTags(r *kbin.Reader) {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint() // tag
		size := r.Uvarint()
		r.Span(int(size))
	}
}

// AppendRequestHeader appends a request header for req (v2 when flexible,
// else v1). Used by kraftd's outbound peer client.
func AppendRequestHeader(dst []byte, req kmsg.Request, correlationID int32, clientID string) []byte {
	dst = kbin.AppendInt16(dst, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, correlationID)
	dst = kbin.AppendNullableString(dst, &clientID)
	if req.IsFlexible() {
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

// ResponseHeaderFlexible reports whether a response to key at version uses
// header v1. ApiVersions always answers with header v0 so that a client that
// sent an unknown version can still read the answer.
func ResponseHeaderFlexible(key, version int16) bool {
	if key == ApiVersionsKey {
		return false
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return false
	}
	return isFlexible(req, version)
}

// AppendResponse appends a whole response frame (size prefix, header, body)
// answering the request with header h.
func AppendResponse(dst []byte, h RequestHeader, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, h.CorrelationID)
	if ResponseHeaderFlexible(h.Key, h.Version) {
		dst = kbin.AppendUvarint(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// ParseResponse parses a response frame (without the size prefix) to req and
// returns its correlation id. Used by kraftd's outbound peer client.
func ParseResponse(frame []byte, req kmsg.Request) (int32, kmsg.Response, error) {
	r := kbin.Reader{Src: frame}
	corr := r.Int32()
	if ResponseHeaderFlexible(req.Key(), req.GetVersion()) {
		skipTags(&r)
	}
	if err := r.Complete(); err != nil {
		return corr, nil, fmt.Errorf("protocol: malformed response header: %v", err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(r.Src); err != nil {
		return corr, nil, fmt.Errorf("protocol: decoding %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return corr, resp, nil
}
