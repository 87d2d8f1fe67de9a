package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/internal/wiretest"
)

// A heartbeat answered on the connection's goroutine still waits its turn
// behind an earlier request of the same connection, and the connection
// goes on reading meanwhile.
func TestHeartbeatAnsweredAtOnceKeepsResponseOrder(t *testing.T) {
	_, addr, b := startServer(t)
	c := wiretest.Dial(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(17)
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.SetVersion(1)
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dq.SetVersion(2)
	c.Send(fetch, 1) // parks until released
	c.Send(hb, 2)    // answered at once (no controller here), after the fetch
	c.Send(dq, 3)
	time.Sleep(50 * time.Millisecond)
	close(b.Release)
	if corr, _ := c.Recv(fetch); corr != 1 {
		t.Fatalf("first response has corr %d", corr)
	}
	if corr, resp := c.Recv(hb); corr != 2 || resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode != kerr.NotController.Code {
		t.Fatalf("second response: corr %d %+v", corr, resp)
	}
	if corr, _ := c.Recv(dq); corr != 3 {
		t.Fatalf("third response has corr %d", corr)
	}
}
