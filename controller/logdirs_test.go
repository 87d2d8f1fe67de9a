package controller

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// Broker 1 has two log directories; brokers 2 and 3 one each. It places
// its replicas with AssignReplicasToDirs, then a heartbeat reports one
// directory failed: its replicas there leave the ISR and leadership, the
// registration drops the directory, and the same report again changes
// nothing.
func TestLogDirAssignmentAndFailure(t *testing.T) {
	ctx := context.Background()
	c, q, _ := newTestController(t, 27)
	d1, d2, lost := [16]byte{0: 0xd1, 15: 0xff}, [16]byte{0: 0xd2, 15: 0xff}, [16]byte(dirLost)
	reg := registration(1, 1)
	reg.LogDirs = [][16]byte{d2, d1}
	e1, err := c.RegisterBroker(ctx, reg)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.BrokerHeartbeat(ctx, heartbeat(1, e1, q.end(), false, false)); err != nil || resp.IsFenced {
		t.Fatalf("unfence broker 1: %v %+v", err, resp)
	}
	register(t, c, q, 2)
	register(t, c, q, 3)
	create := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "t", -1, -1
	topic.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{
		{Partition: 0, Replicas: []int32{1, 2}}, {Partition: 1, Replicas: []int32{1, 3}}, {Partition: 2, Replicas: []int32{2, 3}}, {Partition: 3, Replicas: []int32{1, 2}},
	}
	create.Topics = append(create.Topics, topic)
	if r, err := c.CreateTopics(ctx, create); err != nil || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, r)
	}
	id := c.image.TopicIDs["t"]
	part := func(p int) metadata.Partition { return c.image.Topics[id].Partitions[p] }
	if d := replicaDir(ptr(part(0)), 1); d != dirUnassigned {
		t.Fatalf("broker 1's replica with two directories: %v; want UNASSIGNED", d)
	}

	assign := func(epoch int64, dir [16]byte, topicID [16]byte, partitions ...int32) *kmsg.AssignReplicasToDirsResponse {
		t.Helper()
		req := kmsg.NewPtrAssignReplicasToDirsRequest()
		req.BrokerID, req.BrokerEpoch = 1, epoch
		rt := kmsg.AssignReplicasToDirsRequestDirectoryTopic{TopicID: topicID}
		for _, p := range partitions {
			rt.Partitions = append(rt.Partitions, kmsg.AssignReplicasToDirsRequestDirectoryTopicPartition{Partition: p})
		}
		req.Directories = []kmsg.AssignReplicasToDirsRequestDirectory{{ID: dir, Topics: []kmsg.AssignReplicasToDirsRequestDirectoryTopic{rt}}}
		resp, err := c.AssignReplicasToDirs(ctx, req)
		if err != nil {
			resp = req.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
			resp.ErrorCode = code(err)
		}
		return resp
	}
	codes := func(r *kmsg.AssignReplicasToDirsResponse) []int16 {
		var out []int16
		for _, p := range r.Directories[0].Topics[0].Partitions {
			out = append(out, p.ErrorCode)
		}
		return out
	}
	if r := assign(e1+1, d1, id, 0); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("stale broker epoch: %d", r.ErrorCode)
	}
	if r := assign(e1, d1, [16]byte{9}, 0); !slices.Equal(codes(r), []int16{kerr.UnknownTopicID.Code}) {
		t.Errorf("unknown topic: %v", codes(r))
	}
	if r := assign(e1, d1, id, 0, 2, 9); !slices.Equal(codes(r), []int16{0, kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code}) {
		t.Errorf("partition errors: %v", codes(r))
	}
	if r := assign(e1, d2, id, 1); r.ErrorCode != 0 || codes(r)[0] != 0 {
		t.Fatalf("assign partition 1: %+v", r)
	}
	if got := part(0).Directories(); len(got) != 2 || got[0] != metadata.Uuid(d1) || got[1] != c.image.Brokers[2].LogDirs[0] {
		t.Fatalf("partition 0 directories %v", got)
	}
	if replicaDir(ptr(part(1)), 1) != metadata.Uuid(d2) || part(0).Leader != 1 || part(1).Leader != 1 {
		t.Fatalf("after assignment: %+v %+v", part(0), part(1))
	}

	// Directory d1 fails (with one the broker never had).
	hb := heartbeat(1, e1, q.end(), false, false)
	hb.OfflineLogDirs = [][16]byte{d1, {0: 0xee, 15: 0xff}}
	if _, err := c.BrokerHeartbeat(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if p := part(0); p.Leader != 2 || slices.Contains(p.Isr, 1) {
		t.Errorf("partition 0 in the failed directory: %+v", p)
	}
	if p := part(1); p.Leader != 1 || !slices.Contains(p.Isr, 1) {
		t.Errorf("partition 1 in the healthy directory: %+v", p)
	}
	if dirs := c.image.Brokers[1].LogDirs; !slices.Equal(dirs, []metadata.Uuid{metadata.Uuid(d2)}) {
		t.Errorf("registered directories %v; want only d2", dirs)
	}
	change, ok := q.log[len(q.log)-1].(*metadata.BrokerRegistrationChangeRecord)
	if !ok || change.GetVersion() != 2 || change.Fenced != 0 || change.InControlledShutdown != 0 {
		t.Errorf("last record %#v; want a v2 registration change with only log dirs", q.log[len(q.log)-1])
	}
	before := q.records()
	if _, err := c.BrokerHeartbeat(ctx, hb); err != nil || q.records() != before {
		t.Errorf("the same report again wrote %d records (%v)", q.records()-before, err)
	}
	// Broker 1's replica of partition 0 sits in the failed directory: no
	// election picks it, even from an ISR that holds it.
	b := newPartitionChange(c.image, c.image.Topics[id], 0, func(int32) bool { return true })
	b.targetIsr = []int32{1}
	if leader, _ := b.electLeader(); leader == 1 {
		t.Error("elected the replica in a failed directory")
	}

	// Assigning a replica to a directory that is not online takes it out
	// of the ISR and leadership at once.
	if r := assign(e1, lost, id, 1); r.ErrorCode != 0 || codes(r)[0] != 0 {
		t.Fatalf("assign to LOST: %+v", r)
	}
	if p := part(1); p.Leader != 3 || slices.Contains(p.Isr, 1) || replicaDir(&p, 1) != dirLost {
		t.Errorf("partition 1 assigned to LOST: %+v", p)
	}
}

func TestLogDirsNeedMetadataVersion37IV2(t *testing.T) {
	ctx := context.Background()
	c, q, _ := newTestController(t, MVDirectoryAssignment-1)
	e1 := register(t, c, q, 1)
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID, req.BrokerEpoch = 1, e1
	if _, err := c.AssignReplicasToDirs(ctx, req); code(err) != kerr.UnsupportedVersion.Code {
		t.Errorf("AssignReplicasToDirs below 3.7-IV2: %v", err)
	}
	hb := heartbeat(1, e1, q.end(), false, false)
	hb.OfflineLogDirs = [][16]byte{{0: 0x10, 1: 1, 2: 1}}
	before := q.records()
	if _, err := c.BrokerHeartbeat(ctx, hb); err != nil || q.records() != before {
		t.Errorf("offline directories below 3.7-IV2 wrote %d records (%v)", q.records()-before, err)
	}
}

func ptr[T any](v T) *T { return &v }
