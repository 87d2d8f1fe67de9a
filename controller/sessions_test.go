package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// shutdownCluster registers and unfences brokers 1 and 2 and creates a topic
// of four partitions, two replicas each, so that broker 1 leads some.
func shutdownCluster(t *testing.T) (*Controller, *fakeQuorum, int64, int64) {
	t.Helper()
	c, q, _ := newTestController(t, 27)
	e1, e2 := register(t, c, q, 1), register(t, c, q, 2)
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "t", 4, 2
	create.Topics = append(create.Topics, topic)
	if r, err := c.CreateTopics(context.Background(), create); err != nil || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, r)
	}
	if !leadsAny(c.image, 1) {
		t.Fatal("broker 1 leads nothing")
	}
	return c, q, e1, e2
}

// A broker in controlled shutdown may stop only once every active broker
// has applied the last record of the leader moves, not merely the first
// (Apache keeps the end offset of the batch).
func TestControlledShutdownWaitsForTheLastMove(t *testing.T) {
	ctx := context.Background()
	c, q, e1, e2 := shutdownCluster(t)
	start := q.next
	resp, err := c.BrokerHeartbeat(ctx, heartbeat(1, e1, start, false, true))
	if err != nil || resp.ShouldShutdown {
		t.Fatalf("controlled shutdown: %v %+v", err, resp)
	}
	if q.next-start < 2 {
		t.Fatalf("expected the InControlledShutdown record and leader moves, wrote %d records", q.next-start)
	}
	// Broker 2 has applied the InControlledShutdown record but not the moves.
	if _, err := c.BrokerHeartbeat(ctx, heartbeat(2, e2, start, false, false)); err != nil {
		t.Fatal(err)
	}
	if resp, _ := c.BrokerHeartbeat(ctx, heartbeat(1, e1, start, false, true)); resp.ShouldShutdown {
		t.Fatalf("shutdown granted before broker 2 saw the leader moves: %+v", resp)
	}
	if _, err := c.BrokerHeartbeat(ctx, heartbeat(2, e2, q.next-1, false, false)); err != nil {
		t.Fatal(err)
	}
	if resp, _ := c.BrokerHeartbeat(ctx, heartbeat(1, e1, q.next-1, false, true)); !resp.ShouldShutdown {
		t.Fatalf("shutdown not granted once broker 2 saw every move: %+v", resp)
	}
}
