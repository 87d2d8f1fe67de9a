package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A heartbeat answered on the connection's goroutine still waits its turn
// behind an earlier request of the same connection, and the connection
// goes on reading meanwhile.
func TestHeartbeatAnsweredAtOnceKeepsResponseOrder(t *testing.T) {
	_, addr, b := startServer(t)
	c := dial(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(17)
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.SetVersion(1)
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dq.SetVersion(2)
	c.send(fetch, 1) // parks until released
	c.send(hb, 2)    // answered at once (no controller here), after the fetch
	c.send(dq, 3)
	time.Sleep(50 * time.Millisecond)
	close(b.release)
	if corr, _ := c.recv(fetch); corr != 1 {
		t.Fatalf("first response has corr %d", corr)
	}
	if corr, resp := c.recv(hb); corr != 2 || resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode != kerr.NotController.Code {
		t.Fatalf("second response: corr %d %+v", corr, resp)
	}
	if corr, _ := c.recv(dq); corr != 3 {
		t.Fatalf("third response has corr %d", corr)
	}
}

// On a real node, a heartbeat that unfences (a write to commit) and a
// steady one pipelined behind it on one connection are both answered, in
// order: the first once its record committed, on a goroutine of its own,
// the second at once but after it.
func TestHeartbeatThatWritesAndOneThatDoesNotOnOneConnection(t *testing.T) {
	nodes := startBenchQuorum(t, 1)
	leader := waitBenchLeader(t, nodes, 30*time.Second)
	ctl := leader.Controller()
	epochs := registerBrokersInParallel(t, ctl, leader.ClusterID(), 2, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := ctl.BrokerHeartbeat(ctx, benchHeartbeat(2, epochs[2])); err != nil || resp.IsFenced {
		t.Fatalf("unfence broker 2: %v %+v", err, resp)
	}

	c := dial(t, nodes[0].srv.Addr("CONTROLLER").String())
	unfence, steady := benchHeartbeat(1, epochs[1]), benchHeartbeat(2, epochs[2])
	c.send(unfence, 1)
	c.send(steady, 2)
	corr, resp := c.recv(unfence)
	if hb := resp.(*kmsg.BrokerHeartbeatResponse); corr != 1 || hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("unfencing heartbeat: corr %d %+v", corr, hb)
	}
	corr, resp = c.recv(steady)
	if hb := resp.(*kmsg.BrokerHeartbeatResponse); corr != 2 || hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("steady heartbeat: corr %d %+v", corr, hb)
	}
}
