package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// TestSingleReplicaRestartUnderELR is the rule behind the OfflinePartitions
// alert of compat/metrics_offline_test.go, with eligible leader replicas on:
// a partition whose only replica is on a broker that stops cleanly
// (controlled shutdown) goes offline with that replica in its ELR, and is
// led by it again once it re-registers naming its last broker epoch and is
// unfenced; a broker that re-registers without it (it was killed, and left
// no clean-shutdown marker) is taken out of the ELR, and the partition
// stays offline. Stats counts one offline partition until then.
func TestSingleReplicaRestartUnderELR(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := map[bool]string{true: "clean", false: "unclean"}[clean]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, q, clk := newTestController(t, 27)
			q.write([]metadata.Record{&metadata.FeatureLevelRecord{Name: ELRFeature, FeatureLevel: 1}})
			registerELR(t, c, q, 1)
			epoch := registerELR(t, c, q, 2)
			create := kmsg.NewPtrCreateTopicsRequest()
			create.SetVersion(7)
			topic := kmsg.NewCreateTopicsRequestTopic()
			topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "t", -1, -1
			topic.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{2}}}
			create.Topics = append(create.Topics, topic)
			if r, err := c.CreateTopics(ctx, create); err != nil || r.Topics[0].ErrorCode != 0 {
				t.Fatalf("create: %v %+v", err, r)
			}
			partition := func() metadata.Partition { return c.image.Topics[c.image.TopicIDs["t"]].Partitions[0] }
			if p := partition(); p.Leader != 2 || c.Stats().OfflinePartitions != 0 {
				t.Fatalf("created: %+v, %d offline", p, c.Stats().OfflinePartitions)
			}

			// Controlled shutdown: the partition cannot move; it loses its
			// leader, its only replica goes to the ELR, and the broker may stop
			// once broker 1 has seen that.
			if _, err := c.BrokerHeartbeat(ctx, heartbeat(2, epoch, q.end(), false, true)); err != nil {
				t.Fatal(err)
			}
			if p := partition(); p.Leader != -1 || len(p.Isr) != 0 || !slices.Equal(p.EligibleLeaderReplicas(), []int32{2}) {
				t.Fatalf("after the controlled shutdown began: %+v, ELR %v", p, p.EligibleLeaderReplicas())
			}
			if _, err := c.BrokerHeartbeat(ctx, heartbeat(1, c.image.Brokers[1].BrokerEpoch, q.end(), false, false)); err != nil {
				t.Fatal(err)
			}
			if resp, err := c.BrokerHeartbeat(ctx, heartbeat(2, epoch, q.end(), false, true)); err != nil || !resp.ShouldShutdown {
				t.Fatalf("shutdown not granted: %v %+v", err, resp)
			}
			if n := c.Stats().OfflinePartitions; n != 1 {
				t.Fatalf("%d offline partitions once broker 2 stopped, want 1", n)
			}

			// The old session expires while broker 2 restarts; broker 1
			// keeps its own alive.
			clk.now = clk.now.Add(10 * time.Second)
			if _, err := c.BrokerHeartbeat(ctx, heartbeat(1, c.image.Brokers[1].BrokerEpoch, q.end(), false, false)); err != nil {
				t.Fatal(err)
			}
			fenceStale(t, c)
			// A new incarnation of the same broker: its directory is the
			// one it had (meta.properties keeps it).
			again := elrRegistration(2, 2)
			again.LogDirs = elrRegistration(2, 1).LogDirs
			if clean {
				again.PreviousBrokerEpoch = epoch
			}
			epoch2, err := c.RegisterBroker(ctx, again)
			if err != nil {
				t.Fatal(err)
			}
			wantElr := map[bool][]int32{true: {2}, false: nil}[clean]
			if p := partition(); p.Leader != -1 || !slices.Equal(p.EligibleLeaderReplicas(), wantElr) {
				t.Fatalf("re-registered (%s): %+v, ELR %v, want ELR %v", name, p, p.EligibleLeaderReplicas(), wantElr)
			}
			if resp, err := c.BrokerHeartbeat(ctx, heartbeat(2, epoch2, q.end(), false, false)); err != nil || resp.IsFenced {
				t.Fatalf("not unfenced: %v %+v", err, resp)
			}
			p, offline := partition(), c.Stats().OfflinePartitions
			if clean && (p.Leader != 2 || !slices.Equal(p.Isr, []int32{2}) || offline != 0) {
				t.Errorf("after a clean restart: %+v, %d offline; want broker 2 elected from the ELR, none offline", p, offline)
			}
			if !clean && (p.Leader != -1 || offline != 1) {
				t.Errorf("after an unclean restart: %+v, %d offline; want no leader until an unclean election, one offline", p, offline)
			}
		})
	}
}

// elrRegistration is registration from a broker that supports eligible
// leader replicas.
func elrRegistration(id int32, incarnation byte) *kmsg.BrokerRegistrationRequest {
	req := registration(id, incarnation)
	req.Features = append(req.Features, kmsg.BrokerRegistrationRequestFeature{Name: ELRFeature, MinSupportedVersion: 0, MaxSupportedVersion: 1})
	return req
}

// registerELR is register for such a broker.
func registerELR(t *testing.T, c *Controller, q *fakeQuorum, id int32) int64 {
	t.Helper()
	return registerWith(t, c, q, elrRegistration(id, 1))
}
