package compat

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClientID is the client id the harness sends in request headers.
const ClientID = "kraftd-compat"

// RequestTimeout bounds one Request call (dial, write and read).
const RequestTimeout = 5 * time.Second

// Request opens a connection to addr, sends one request and returns its
// response. The request is sent at the version set on it (SetVersion; kmsg
// defaults to 0). Bodies are franz-go kmsg types; framing and headers are
// written here: request header v1, or v2 when the request version is flexible;
// response header v0 for ApiVersions (key 18) and for non-flexible versions,
// else v1.
func Request(addr string, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), RequestTimeout)
	defer cancel()
	c, err := Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Request(ctx, req)
}

// Conn is one client connection to a Kafka listener, for tests that send
// several requests in order on the same socket (as real peers do).
type Conn struct {
	mu   sync.Mutex
	nc   net.Conn
	corr int32
}

// Dial connects to addr (a 127.0.0.1 address), over TLS when the test
// called UseTLS for it, authenticated when it called UseSASL.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, errorf("dial %s: %w", addr, err)
	}
	if nc, err = secureConn(ctx, addr, nc); err != nil {
		return nil, err
	}
	c := &Conn{nc: nc}
	if err := authenticateConn(ctx, addr, c); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Request sends req and waits for its response, until ctx is done (or
// RequestTimeout if ctx has no deadline). Requests on one Conn are serialized.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	corr, err := c.send(ctx, req)
	if err != nil {
		return nil, err
	}
	frame, err := ReadFrame(c.nc)
	if err != nil {
		return nil, errorf("read %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return ParseResponse(req, corr, frame)
}

// send writes req under ctx's deadline (or RequestTimeout) and returns its
// correlation id; the caller holds c.mu.
func (c *Conn) send(ctx context.Context, req kmsg.Request) (int32, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(RequestTimeout)
	}
	if err := c.nc.SetDeadline(deadline); err != nil {
		return 0, errorf("%w", err)
	}
	c.corr++
	if _, err := c.nc.Write(AppendRequest(nil, req, c.corr, ClientID)); err != nil {
		return 0, errorf("send %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	return c.corr, nil
}

// AppendRequest appends a whole request frame (size, header, body) to dst.
func AppendRequest(dst []byte, req kmsg.Request, correlationID int32, clientID string) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, filled in below
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	// client_id is a non-compact nullable string in both header versions.
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if req.IsFlexible() {
		dst = append(dst, 0) // header v2: no tagged fields
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// MaxFrame is the largest response frame ReadFrame accepts.
const MaxFrame = 100 << 20

// ReadFrame reads one size-prefixed frame and returns it without the size.
func ReadFrame(r io.Reader) ([]byte, error) {
	n, err := readFrameSize(r)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// readFrameSize reads a frame's size prefix, refusing one that cannot hold
// a correlation id or is over MaxFrame.
func readFrameSize(r io.Reader) (int32, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > MaxFrame {
		return 0, errorf("bad frame size %d", n)
	}
	return n, nil
}

// ParseResponse checks the response header of frame against the request
// and decodes the body into req's response kind.
func ParseResponse(req kmsg.Request, correlationID int32, frame []byte) (kmsg.Response, error) {
	if len(frame) < 4 {
		return nil, errorf("response too short (%d bytes)", len(frame))
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != correlationID {
		return nil, errorf("correlation id %d, want %d", got, correlationID)
	}
	body := frame[4:]
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, errorf("response header: %w", err)
		}
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return nil, errorf("decode %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// skipTags skips a tagged-field section (uvarint count, then per field a
// uvarint tag, a uvarint size and the bytes).
func skipTags(b []byte) ([]byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, errorf("bad tag count")
	}
	b = b[w:]
	for range n {
		if _, w = binary.Uvarint(b); w <= 0 {
			return nil, errorf("bad tag")
		}
		b = b[w:]
		size, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < size {
			return nil, errorf("bad tag size")
		}
		b = b[w+int(size):]
	}
	return b, nil
}
