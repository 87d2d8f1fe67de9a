package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// reassignCluster is a controller with brokers 1-4 registered and
// unfenced and topic "t" with one partition on brokers {1,2}, led by 1.
type reassignCluster struct {
	t  *testing.T
	c  *Controller
	q  *fakeQuorum
	id [16]byte
}

func newReassignCluster(t *testing.T) *reassignCluster {
	c, q, _ := newTestController(t, 27)
	for id := int32(1); id <= 4; id++ {
		register(t, c, q, id)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "t", -1, -1
	topic.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}
	req.Topics = append(req.Topics, topic)
	if r, err := c.CreateTopics(context.Background(), req); err != nil || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	return &reassignCluster{t: t, c: c, q: q, id: c.image.TopicIDs["t"]}
}

func (rc *reassignCluster) part() metadata.Partition {
	rc.c.mu.RLock()
	defer rc.c.mu.RUnlock()
	return rc.c.image.Topics[rc.id].Partitions[0]
}

// describe renders the partition as the tests compare it.
func describe(p metadata.Partition) string {
	return fmt.Sprintf("replicas=%v isr=%v leader=%d adding=%v removing=%v leaderEpoch=%d",
		p.Replicas, p.Isr, p.Leader, p.AddingReplicas(), p.RemovingReplicas(), p.LeaderEpoch)
}

func (rc *reassignCluster) want(what, want string) {
	rc.t.Helper()
	if got := describe(rc.part()); got != want {
		rc.t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// reassign sends one AlterPartitionReassignments for partition 0 of
// topic (replicas nil cancels) and returns its error code and message.
func (rc *reassignCluster) reassign(version int16, allowRF bool, topic string, replicas []int32) (int16, string) {
	rc.t.Helper()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.SetVersion(version)
	req.AllowReplicationFactorChange = allowRF
	req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: replicas}}}}
	resp, err := rc.c.AlterPartitionReassignments(context.Background(), req)
	if err != nil {
		rc.t.Fatal(err)
	}
	if resp.AllowReplicationFactorChange != (version < 1 || allowRF) {
		rc.t.Errorf("AllowReplicationFactorChange echoed as %v", resp.AllowReplicationFactorChange)
	}
	res := resp.Topics[0].Partitions[0]
	msg := ""
	if res.ErrorMessage != nil {
		msg = *res.ErrorMessage
	}
	return res.ErrorCode, msg
}

// alterIsr is the leader's AlterPartition setting the ISR of partition 0.
func (rc *reassignCluster) alterIsr(isr ...int32) int16 {
	rc.t.Helper()
	p := rc.part()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID, req.BrokerEpoch = p.Leader, rc.c.image.Brokers[p.Leader].BrokerEpoch
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.LeaderEpoch, rp.PartitionEpoch = p.LeaderEpoch, p.PartitionEpoch
	for _, b := range isr {
		rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: b, BrokerEpoch: rc.c.image.Brokers[b].BrokerEpoch})
	}
	req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: rc.id, Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}
	resp, err := rc.c.AlterPartition(context.Background(), req)
	if err != nil {
		rc.t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func (rc *reassignCluster) list(topics []kmsg.ListPartitionReassignmentsRequestTopic) []kmsg.ListPartitionReassignmentsResponseTopic {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.Topics = topics
	return rc.c.ListPartitionReassignments(req).Topics
}

// A move of {1,2} to {2,3}: 3 is added first; once the leader puts it in
// the ISR, 1 leaves, and since 1 led, leadership passes to 2, the first
// target replica in the ISR; the leader that completed it hears
// NEW_LEADER_ELECTED.
func TestReassignmentMovesReplicasThroughTheISR(t *testing.T) {
	rc := newReassignCluster(t)
	rc.want("created", "replicas=[1 2] isr=[1 2] leader=1 adding=[] removing=[] leaderEpoch=0")
	if code, msg := rc.reassign(1, false, "t", []int32{2, 3}); code != 0 {
		t.Fatalf("reassign: %d %s", code, msg)
	}
	// The old replicas all stay for now: no new leader epoch yet.
	rc.want("started", "replicas=[2 3 1] isr=[1 2] leader=1 adding=[3] removing=[1] leaderEpoch=0")
	if dirs := rc.part().Directories(); len(dirs) != 3 || dirs[1] != rc.c.image.Brokers[3].LogDirs[0] {
		t.Fatalf("directories %v: broker 3's replica belongs in its only directory", dirs)
	}
	got := rc.list(nil)
	if len(got) != 1 || got[0].Topic != "t" || !slices.Equal(got[0].Partitions[0].AddingReplicas, []int32{3}) ||
		!slices.Equal(got[0].Partitions[0].RemovingReplicas, []int32{1}) || !slices.Equal(got[0].Partitions[0].Replicas, []int32{2, 3, 1}) {
		t.Fatalf("list during the move: %+v", got)
	}
	if code := rc.alterIsr(1, 2, 3); code != kerr.NewLeaderElected.Code {
		t.Fatalf("the ISR change that completes the move: %d, want NEW_LEADER_ELECTED", code)
	}
	rc.want("completed", "replicas=[2 3] isr=[2 3] leader=2 adding=[] removing=[] leaderEpoch=1")
	if got := rc.list(nil); len(got) != 0 {
		t.Fatalf("list after the move: %+v", got)
	}
	if code, _ := rc.reassign(1, false, "t", nil); code != kerr.NoReassignmentInProgress.Code {
		t.Fatalf("cancel with nothing in progress: %d", code)
	}
}

// A reassignment that only reorders the replicas completes at once, and
// one whose targets are all in the ISR already completes in its first
// record.
func TestReassignmentWithinTheISRCompletesAtOnce(t *testing.T) {
	rc := newReassignCluster(t)
	if code, _ := rc.reassign(1, false, "t", []int32{2, 1}); code != 0 {
		t.Fatal(code)
	}
	rc.want("reordered", "replicas=[2 1] isr=[1 2] leader=1 adding=[] removing=[] leaderEpoch=0")
	if code, _ := rc.reassign(1, true, "t", []int32{2}); code != 0 {
		t.Fatal(code)
	}
	rc.want("shrunk", "replicas=[2] isr=[2] leader=2 adding=[] removing=[] leaderEpoch=1")
}

// Cancelling reverts to the original replicas; the ISR keeps the members
// that were not being added; a leader that was being added gives way.
func TestReassignmentCancellationReverts(t *testing.T) {
	rc := newReassignCluster(t)
	if code, _ := rc.reassign(1, false, "t", []int32{3, 4}); code != 0 {
		t.Fatal(code)
	}
	rc.want("started", "replicas=[3 4 1 2] isr=[1 2] leader=1 adding=[3 4] removing=[1 2] leaderEpoch=0")
	if code := rc.alterIsr(1, 2, 3); code != 0 {
		t.Fatalf("3 joins the ISR: %d", code)
	}
	rc.want("3 in the ISR", "replicas=[3 4 1 2] isr=[1 2 3] leader=1 adding=[3 4] removing=[1 2] leaderEpoch=0")
	if code, msg := rc.reassign(1, false, "t", nil); code != 0 {
		t.Fatalf("cancel: %d %s", code, msg)
	}
	rc.want("cancelled", "replicas=[1 2] isr=[1 2] leader=1 adding=[] removing=[] leaderEpoch=1")
	if got := rc.list(nil); len(got) != 0 {
		t.Fatalf("list after the cancel: %+v", got)
	}
}

// A new target while a move is in flight: a replica being added that the
// new target drops is removed, not left both adding and removing, and one
// being removed that the new target keeps stays (see reassign.go).
func TestReassignmentReplacedInFlight(t *testing.T) {
	rc := newReassignCluster(t)
	if code, _ := rc.reassign(1, true, "t", []int32{3, 2}); code != 0 {
		t.Fatal(code)
	}
	rc.want("first target", "replicas=[3 2 1] isr=[1 2] leader=1 adding=[3] removing=[1] leaderEpoch=0")
	if code, _ := rc.reassign(1, true, "t", []int32{2}); code != 0 {
		t.Fatal(code)
	}
	// 3 and 1 leave; 2 is in the ISR, so the move completes at once.
	rc.want("second target", "replicas=[2] isr=[2] leader=2 adding=[] removing=[] leaderEpoch=1")
	if code, _ := rc.reassign(1, true, "t", []int32{2, 4}); code != 0 {
		t.Fatal(code)
	}
	if code, _ := rc.reassign(1, true, "t", []int32{2, 4, 3}); code != 0 {
		t.Fatal(code)
	}
	rc.want("grown in flight", "replicas=[2 4 3] isr=[2] leader=2 adding=[3 4] removing=[] leaderEpoch=1")
	// Repeating a target in flight changes nothing (--execute --additional).
	if code, _ := rc.reassign(1, true, "t", []int32{2, 4, 3}); code != 0 {
		t.Fatal(code)
	}
	rc.want("repeated", "replicas=[2 4 3] isr=[2] leader=2 adding=[3 4] removing=[] leaderEpoch=1")
}

// Apache's refusals, each per partition.
func TestReassignmentRefusals(t *testing.T) {
	rc := newReassignCluster(t)
	cases := []struct {
		name     string
		version  int16
		allowRF  bool
		topic    string
		replicas []int32
		code     int16
		msg      string
	}{
		{"unknown topic", 1, false, "nope", []int32{1, 2}, kerr.UnknownTopicOrPartition.Code, "Unable to find a topic named nope."},
		{"empty", 1, true, "t", []int32{}, kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list."},
		{"duplicate", 1, true, "t", []int32{2, 2}, kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes the broker 2 more than once."},
		{"unregistered", 1, true, "t", []int32{2, 9}, kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes broker 9, but no such broker is registered."},
		{"RF change refused", 1, false, "t", []int32{1, 2, 3}, kerr.InvalidReplicationFactor.Code, "The replication factor is changed from 2 to 3"},
		{"cancel with none", 1, false, "t", nil, kerr.NoReassignmentInProgress.Code, ""},
	}
	for _, tc := range cases {
		if code, msg := rc.reassign(tc.version, tc.allowRF, tc.topic, tc.replicas); code != tc.code || msg != tc.msg {
			t.Errorf("%s: got %d %q, want %d %q", tc.name, code, msg, tc.code, tc.msg)
		}
	}
	rc.want("after the refusals", "replicas=[1 2] isr=[1 2] leader=1 adding=[] removing=[] leaderEpoch=0")
	// v0 has no AllowReplicationFactorChange and may change it.
	if code, msg := rc.reassign(0, false, "t", []int32{1, 2, 3}); code != 0 {
		t.Fatalf("v0 RF change: %d %s", code, msg)
	}
	rc.want("RF 3", "replicas=[1 2 3] isr=[1 2] leader=1 adding=[3] removing=[] leaderEpoch=0")
	// The replication factor in flight is the target's: 3.
	if code, msg := rc.reassign(1, false, "t", []int32{1, 2}); code != kerr.InvalidReplicationFactor.Code || msg != "The replication factor is changed from 3 to 2" {
		t.Fatalf("RF change against the one in flight: %d %q", code, msg)
	}
}

// A cancellation that would leave only replicas that were being added in
// the ISR needs an unclean election, refused unless the topic allows it.
func TestReassignmentCancellationNeedsUncleanElection(t *testing.T) {
	rc := newReassignCluster(t)
	if code, _ := rc.reassign(1, false, "t", []int32{3, 4}); code != 0 {
		t.Fatal(code)
	}
	if code := rc.alterIsr(1, 2, 3); code != 0 {
		t.Fatalf("3 joins: %d", code)
	}
	// Brokers 1 and 2 fence: 3 leads alone, and 4 has not caught up, so
	// the move cannot complete.
	for _, id := range []int32{1, 2} {
		b := rc.c.image.Brokers[id]
		if _, err := rc.c.BrokerHeartbeat(context.Background(), heartbeat(id, b.BrokerEpoch, rc.q.end(), true, false)); err != nil {
			t.Fatal(err)
		}
	}
	rc.want("1 and 2 fenced", "replicas=[3 4 1 2] isr=[3] leader=3 adding=[3 4] removing=[1 2] leaderEpoch=1")
	code, msg := rc.reassign(1, false, "t", nil)
	if code != kerr.InvalidReplicaAssignment.Code || msg != "Unable to revert partition assignment for t:0 because it would require an unclean leader election." {
		t.Fatalf("unclean revert refused: %d %q", code, msg)
	}
	rc.q.write([]metadata.Record{&metadata.ConfigRecord{ResourceType: resourceTopic, ResourceName: "t", Name: "unclean.leader.election.enable", Value: ptr("true")}})
	if code, msg := rc.reassign(1, false, "t", nil); code != 0 {
		t.Fatalf("unclean revert allowed: %d %q", code, msg)
	}
	// The first original replica is the ISR; it is fenced, so no leader.
	rc.want("reverted", "replicas=[1 2] isr=[1] leader=-1 adding=[] removing=[] leaderEpoch=2")
}

// The state of a reassignment is in the records: a controller that
// replays the log (a failover) completes it when the ISR lets it.
func TestReassignmentSurvivesFailover(t *testing.T) {
	rc := newReassignCluster(t)
	if code, _ := rc.reassign(1, false, "t", []int32{2, 3}); code != 0 {
		t.Fatal(code)
	}
	rc.q.mu.Lock()
	log := slices.Clone(rc.q.log)
	rc.q.mu.Unlock()

	c := New(1, nil)
	q := newFakeQuorum(t, c)
	q.activate(&clock{now: time.Unix(2000, 0)}, Settings{NodeID: 1, ClusterID: testCluster, SessionTimeout: 9 * time.Second,
		Rand: rand.New(rand.NewPCG(1, 2)), TopicIDs: rand.NewChaCha8([32]byte{2})})
	q.lead(2, true)
	q.write(log)
	next := &reassignCluster{t: t, c: c, q: q, id: rc.id}
	next.want("replayed", "replicas=[2 3 1] isr=[1 2] leader=1 adding=[3] removing=[1] leaderEpoch=0")
	if got := next.list([]kmsg.ListPartitionReassignmentsRequestTopic{{Topic: "t", Partitions: []int32{0, 7}}, {Topic: "gone", Partitions: []int32{0}}}); len(got) != 1 || len(got[0].Partitions) != 1 {
		t.Fatalf("list on the new controller: %+v", got)
	}
	if code := next.alterIsr(1, 2, 3); code != kerr.NewLeaderElected.Code {
		t.Fatalf("completing on the new controller: %d", code)
	}
	next.want("completed", "replicas=[2 3] isr=[2 3] leader=2 adding=[] removing=[] leaderEpoch=1")
}

// Random reassignments, cancellations and ISR changes from the leader,
// from one seed: every answer is an Apache error code or success, and the
// partition always keeps the invariants brokers rely on.
func TestReassignmentRandomWalkKeepsInvariants(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { reassignRandomWalk(t, seed) })
	}
}

func reassignRandomWalk(t *testing.T, seed uint64) {
	rc := newReassignCluster(t)
	r := rand.New(rand.NewPCG(seed, 11))
	allowed := map[int16]bool{0: true, kerr.InvalidReplicaAssignment.Code: true, kerr.InvalidReplicationFactor.Code: true,
		kerr.NoReassignmentInProgress.Code: true, kerr.NewLeaderElected.Code: true, kerr.InvalidRequest.Code: true,
		kerr.IneligibleReplica.Code: true}
	for step := range 400 {
		p := rc.part()
		var code int16
		switch r.IntN(3) {
		case 0:
			var target []int32
			for _, b := range r.Perm(5) { // broker 5 is not registered
				if r.IntN(2) == 0 {
					target = append(target, int32(b+1))
				}
			}
			if target == nil {
				target = []int32{}
			}
			code, _ = rc.reassign(int16(r.IntN(2)), r.IntN(2) == 0, "t", target)
		case 1:
			code, _ = rc.reassign(1, false, "t", nil)
		default:
			if p.Leader < 0 {
				continue
			}
			isr := []int32{p.Leader}
			for _, b := range p.Replicas {
				if b != p.Leader && r.IntN(2) == 0 {
					isr = append(isr, b)
				}
			}
			code = rc.alterIsr(isr...)
		}
		if !allowed[code] {
			t.Fatalf("step %d: error code %d from %s", step, code, describe(p))
		}
		before := p
		p = rc.part()
		if err := partitionInvariants(p); err != nil {
			t.Fatalf("step %d: %v: %s (before: %s)", step, err, describe(p), describe(before))
		}
	}
}

func partitionInvariants(p metadata.Partition) error {
	switch {
	case len(p.Replicas) == 0 || hasDuplicates(p.Replicas):
		return fmt.Errorf("bad replicas")
	case !containsAll(p.Replicas, p.Isr):
		return fmt.Errorf("ISR outside the replicas")
	case !containsAll(p.Replicas, p.AddingReplicas()) || !containsAll(p.Replicas, p.RemovingReplicas()):
		return fmt.Errorf("adding or removing outside the replicas")
	case len(without(p.AddingReplicas(), p.RemovingReplicas())) != len(p.AddingReplicas()):
		return fmt.Errorf("a replica both added and removed")
	case p.Leader != -1 && !slices.Contains(p.Isr, p.Leader):
		return fmt.Errorf("leader outside the ISR")
	case p.Directories() != nil && len(p.Directories()) != len(p.Replicas):
		return fmt.Errorf("%d directories for %d replicas", len(p.Directories()), len(p.Replicas))
	}
	return nil
}

// With eligible leader replicas on, a move whose completion leaves the ISR
// below min.insync.replicas keeps the replicas leaving it as ELR, as
// Apache's builder does (its ELR candidates are the old ISR and ELR, not
// filtered by the new replica list); the election still only picks from
// the replicas.
func TestReassignmentWithEligibleLeaderReplicas(t *testing.T) {
	rc := newReassignCluster(t)
	rc.q.write([]metadata.Record{
		&metadata.FeatureLevelRecord{Name: ELRFeature, FeatureLevel: 1},
		&metadata.ConfigRecord{ResourceType: resourceTopic, ResourceName: "t", Name: "min.insync.replicas", Value: ptr("2")},
	})
	if code, _ := rc.reassign(1, false, "t", []int32{2, 3}); code != 0 {
		t.Fatal(code)
	}
	b := rc.c.image.Brokers[2]
	if _, err := rc.c.BrokerHeartbeat(context.Background(), heartbeat(2, b.BrokerEpoch, rc.q.end(), true, false)); err != nil {
		t.Fatal(err)
	}
	if p := rc.part(); !slices.Equal(p.Isr, []int32{1}) || !slices.Equal(p.EligibleLeaderReplicas(), []int32{2}) {
		t.Fatalf("2 fenced: %s elr=%v", describe(p), p.EligibleLeaderReplicas())
	}
	if code := rc.alterIsr(1, 3); code != kerr.NewLeaderElected.Code {
		t.Fatalf("completing: %d", code)
	}
	p := rc.part()
	rc.want("completed", "replicas=[2 3] isr=[3] leader=3 adding=[] removing=[] leaderEpoch=1")
	if !slices.Equal(p.EligibleLeaderReplicas(), []int32{1, 2}) {
		t.Fatalf("ELR %v, want [1 2]", p.EligibleLeaderReplicas())
	}
}
