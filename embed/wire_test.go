package embed

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/protocol"
)

// testConn is a raw Kafka client connection: requests written as framed
// bytes, answers read back in order.
type testConn struct {
	t *testing.T
	net.Conn
}

func dial(t *testing.T, addr string) *testConn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &testConn{t, c}
}

func (c *testConn) send(req kmsg.Request, corr int32) {
	payload := req.AppendTo(protocol.AppendRequestHeader(nil, req, corr, "test"))
	if _, err := c.Write(protocol.AppendFrame(nil, payload)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *testConn) recv(req kmsg.Request) (int32, kmsg.Response) {
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

// answered reports whether c gets an answer to ApiVersions.
func answered(t *testing.T, c *testConn, corr int32) bool {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	c.send(req, corr)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := protocol.ReadFrame(c, 1<<24)
	if err != nil {
		return false
	}
	got, _, err := protocol.ParseResponse(frame, req)
	return err == nil && got == corr
}

func createACLsRequest(acls ...authz.ACL) *kmsg.CreateACLsRequest {
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
