// Package wiretest is test support, imported only by _test.go files: a raw
// Kafka client that writes framed requests to a kraftd listener and reads
// the answers back, and the fixed state of a server with no quorum behind
// it. It owns no production behaviour and production code must never import
// it (TestOnlyTestsImportWiretest fails when a non-test file does). It does
// not import server, whose own tests use it.
package wiretest

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/protocol"
)

// Conn is a raw Kafka client connection: requests written as framed
// bytes, answers read back in order. A failed write or read fails the test.
type Conn struct {
	net.Conn
	t testing.TB
}

// Dial connects to addr over TCP, with a 20 s deadline on the whole
// connection; the connection is closed when the test ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return NewConn(t, c)
}

// NewConn wraps a connection the test opened itself (over TLS, from a
// chosen local address); it is closed when the test ends.
func NewConn(t testing.TB, c net.Conn) *Conn {
	t.Cleanup(func() { c.Close() })
	return &Conn{Conn: c, t: t}
}

// Send writes req with correlation id corr and client id "test".
func (c *Conn) Send(req kmsg.Request, corr int32) {
	payload := req.AppendTo(protocol.AppendRequestHeader(nil, req, corr, "test"))
	c.Raw(protocol.AppendFrame(nil, payload))
}

// Raw writes b as it is: a frame, part of one, or bytes that are none.
func (c *Conn) Raw(b []byte) {
	if _, err := c.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// Recv reads the next answer as the response to req.
func (c *Conn) Recv(req kmsg.Request) (int32, kmsg.Response) {
	frame, err := protocol.ReadFrame(c, 1<<24)
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	corr, resp, err := protocol.ParseResponse(frame, req)
	if err != nil {
		c.t.Fatal(err)
	}
	return corr, resp
}

// Closed reports whether reading fails as on a closed connection. A read
// deadline passing counts too: see ClosedByServer.
func (c *Conn) Closed() bool {
	_, err := c.Read(make([]byte, 1))
	var op *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &op)
}

// Answered reports whether an ApiVersions request sent with corr is
// answered within 10 s; a closed connection is not.
func (c *Conn) Answered(corr int32) bool {
	req := kmsg.NewPtrApiVersionsRequest()
	c.Send(req, corr)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := protocol.ReadFrame(c, 1<<24)
	if err != nil {
		return false
	}
	got, _, err := protocol.ParseResponse(frame, req)
	return err == nil && got == corr
}

// CreateACLsRequest is a CreateAcls v3 request creating acls.
func CreateACLsRequest(acls ...authz.ACL) *kmsg.CreateACLsRequest {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	for _, a := range acls {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
		c.Principal, c.Host, c.Operation, c.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		req.Creations = append(req.Creations, c)
	}
	return req
}
