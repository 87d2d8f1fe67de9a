package controller

import (
	"context"
	"slices"
	"testing"
	"time"

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
	start := q.end()
	resp, err := c.BrokerHeartbeat(ctx, heartbeat(1, e1, start, false, true))
	if err != nil || resp.ShouldShutdown {
		t.Fatalf("controlled shutdown: %v %+v", err, resp)
	}
	if q.end()-start < 2 {
		t.Fatalf("expected the InControlledShutdown record and leader moves, wrote %d records", q.end()-start)
	}
	// Broker 2 has applied the InControlledShutdown record but not the moves.
	if _, err := c.BrokerHeartbeat(ctx, heartbeat(2, e2, start, false, false)); err != nil {
		t.Fatal(err)
	}
	if resp, _ := c.BrokerHeartbeat(ctx, heartbeat(1, e1, start, false, true)); resp.ShouldShutdown {
		t.Fatalf("shutdown granted before broker 2 saw the leader moves: %+v", resp)
	}
	if _, err := c.BrokerHeartbeat(ctx, heartbeat(2, e2, q.end()-1, false, false)); err != nil {
		t.Fatal(err)
	}
	if resp, _ := c.BrokerHeartbeat(ctx, heartbeat(1, e1, q.end()-1, false, true)); !resp.ShouldShutdown {
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
	q.activate(nil, Settings{NodeID: 1, ClusterID: testCluster})
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

// expired skips its scan while no session can have run out, and still
// finds every one that has: a broker unfenced after an empty scan, one
// touched late, and one reported but not fenced yet (reported again).
func TestSessionsExpireOnTimeBetweenScans(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newSessions(9 * time.Second)
	if got := s.expired(t0); len(got) != 0 {
		t.Fatalf("no sessions, expired %v", got)
	}
	s.register(1, 10, false, t0)                     // expires after t0+9s
	s.touch(2, 20, false, -1, t0.Add(5*time.Second)) // after t0+14s
	if got := s.expired(t0.Add(9 * time.Second)); len(got) != 0 {
		t.Fatalf("at t0+9s expired %v", got)
	}
	s.touch(1, 10, false, -1, t0.Add(9*time.Second)) // now after t0+18s
	if got := s.expired(t0.Add(15 * time.Second)); !slices.Equal(got, []int32{2}) {
		t.Fatalf("at t0+15s expired %v, want [2]", got)
	}
	if got := s.expired(t0.Add(16 * time.Second)); !slices.Equal(got, []int32{2}) {
		t.Fatalf("2 not fenced yet: at t0+16s expired %v, want [2] again", got)
	}
	s.fence(2)
	if got := s.expired(t0.Add(17 * time.Second)); len(got) != 0 {
		t.Fatalf("at t0+17s expired %v", got)
	}
	if got := s.expired(t0.Add(19 * time.Second)); !slices.Equal(got, []int32{1}) {
		t.Fatalf("at t0+19s expired %v, want [1]", got)
	}
}
