package controller

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// At metadata.version 4.3-IV0 a broker registers at RegisterBrokerRecord
// v4, and the cordoned directories it sends in heartbeats v2 are recorded
// once per change; a broker whose only directory is cordoned takes no new
// replicas, by placement or by a manual assignment. Uncordoning gives it
// replicas again.
func TestCordonedLogDirs(t *testing.T) {
	ctx := context.Background()
	c, q, _ := newTestController(t, MVCordonedLogDirs)
	epochs := map[int32]int64{1: registerLatest(t, c, q, 1), 2: registerLatest(t, c, q, 2)}
	if v := c.image.Brokers[1].Version; v != 4 {
		t.Fatalf("RegisterBrokerRecord v%d at 4.3-IV0, want v4", v)
	}
	if c.image.Brokers[1].CordonedLogDirs != nil {
		t.Fatal("cordoned dirs known before any heartbeat listed them")
	}
	cordon := func(dirs [][16]byte) int {
		t.Helper()
		hb := heartbeat(1, epochs[1], q.end(), false, false)
		hb.SetVersion(2)
		hb.CordonedLogDirs = dirs
		before := q.records()
		if _, err := c.BrokerHeartbeat(ctx, hb); err != nil {
			t.Fatal(err)
		}
		return q.records() - before
	}
	dir := [16]byte{0: 0x10, 1: 1, 2: 1}
	if n := cordon([][16]byte{dir}); n != 1 {
		t.Fatalf("cordoning wrote %d records, want 1", n)
	}
	if n := cordon([][16]byte{dir}); n != 0 {
		t.Fatalf("the same cordoned set again wrote %d records", n)
	}
	if got := c.image.Brokers[1].CordonedLogDirs; len(got) != 1 || got[0] != dir {
		t.Fatalf("cordoned dirs %v", got)
	}
	create := func(name string, manual []int32) *kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		topic := kmsg.NewCreateTopicsRequestTopic()
		topic.Topic, topic.NumPartitions, topic.ReplicationFactor = name, 4, 1
		if manual != nil {
			topic.NumPartitions, topic.ReplicationFactor = -1, -1
			topic.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: manual}}
		}
		req.Topics = append(req.Topics, topic)
		resp, err := c.CreateTopics(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return &resp.Topics[0]
	}
	if r := create("placed", nil); r.ErrorCode != 0 {
		t.Fatalf("create: %d", r.ErrorCode)
	}
	for _, p := range c.image.Topics[c.image.TopicIDs["placed"]].Partitions {
		if p.Replicas[0] != 2 {
			t.Fatalf("a replica went to broker 1, whose only directory is cordoned: %v", p.Replicas)
		}
	}
	if r := create("manual", []int32{1}); r.ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("manual assignment to a cordoned broker: %d", r.ErrorCode)
	}
	if n := cordon([][16]byte{}); n != 1 {
		t.Fatalf("uncordoning wrote %d records", n)
	}
	if r := create("manual", []int32{1}); r.ErrorCode != 0 {
		t.Fatalf("manual assignment after uncordoning: %d", r.ErrorCode)
	}
}

// Below 4.3-IV0 the cordoned list is ignored, as in Apache.
func TestCordonedLogDirsIgnoredBefore43(t *testing.T) {
	ctx := context.Background()
	c, q, _ := newTestController(t, 29)
	e := registerLatest(t, c, q, 1)
	hb := heartbeat(1, e, q.end(), false, false)
	hb.SetVersion(2)
	hb.CordonedLogDirs = [][16]byte{{0: 0x10, 1: 1, 2: 1}}
	before := q.records()
	if _, err := c.BrokerHeartbeat(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if q.records() != before || c.image.Brokers[1].CordonedLogDirs != nil || c.image.Brokers[1].Version != 3 {
		t.Fatalf("at 4.2-IV1: %d records, cordoned %v, RegisterBrokerRecord v%d", q.records()-before, c.image.Brokers[1].CordonedLogDirs, c.image.Brokers[1].Version)
	}
}

// registerLatest registers and unfences a broker that supports every
// metadata.version kraftd does.
func registerLatest(t *testing.T, c *Controller, q *fakeQuorum, id int32) int64 {
	t.Helper()
	ctx := context.Background()
	reg := registration(id, 1)
	reg.Features[0].MaxSupportedVersion = LatestMetadataVersion
	e, err := c.RegisterBroker(ctx, reg)
	if err != nil {
		t.Fatalf("register %d: %v", id, err)
	}
	if resp, err := c.BrokerHeartbeat(ctx, heartbeat(id, e, q.end(), false, false)); err != nil || resp.IsFenced {
		t.Fatalf("unfence %d: %v %+v", id, err, resp)
	}
	return e
}
