package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
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

// A new leader of a log without a metadata.version proposes nothing of its
// own (not even its epoch's NoOp barrier) before the bootstrap records have
// committed: an Apache follower would otherwise commit a record ahead of
// any metadata.version and stop.
func TestNothingBeforeTheBootstrapRecords(t *testing.T) {
	boot := []metadata.Record{&metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 27}}
	c := New(1, boot)
	q := newFakeQuorum(t, c)
	c.Activate(q, Settings{NodeID: 1, ClusterID: testCluster})
	if _, err := c.RegisterBroker(context.Background(), registration(1, 1)); code(err) != kerr.NotController.Code {
		t.Fatalf("registration before bootstrap: %v", err)
	}
	if fenced, err := c.FenceStaleBrokers(context.Background()); fenced || code(err) != kerr.NotController.Code {
		t.Fatalf("fencing before bootstrap: %v %v", fenced, err)
	}
	if len(q.log) != 0 {
		t.Fatalf("proposed before the bootstrap records: %v", q.log)
	}
	q.write(c.ActivationRecords())
	if _, err := c.RegisterBroker(context.Background(), registration(1, 1)); err != nil {
		t.Fatalf("registration after bootstrap: %v", err)
	}
}
