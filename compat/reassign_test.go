package compat

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Main classes of kafka-reassign-partitions and kafka-leader-election.
const (
	MainReassign       = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
	MainLeaderElection = "org.apache.kafka.tools.LeaderElectionCommand"
)

// checkReassignAndElect runs Apache's kafka-reassign-partitions and
// kafka-leader-election through three stock Apache brokers on a
// three-node kraftd quorum (the AdminTools step of
// TestApacheBrokersOnKraftd), each check in turn on the one cluster:
//   - Move: --generate proposes, --execute starts and --verify confirms
//     the move of topic "moving" (RF 2, on brokers 101 and 102) to 102 and
//     103, while franz-go produces to it and reads it back: nothing
//     acknowledged is lost;
//   - Cancel: a move of topic "bulk" (4 MiB on 101 and 102) to 102 and 103,
//     throttled to a byte a second so it stays mid-way, listed with --list
//     straight from the controllers (--bootstrap-controller), then
//     --cancel (also straight to the controllers): the replicas are 101
//     and 102 again (as 102,101: Apache's revert keeps the mid-move
//     order);
//   - Failover: the same move again; the active kraftd is SIGKILLed; the
//     new one lists it, --execute --additional lifts the throttle and the
//     move completes;
//   - PREFERRED: a reordering that completes at once leaves the old leader
//     in place; kafka-leader-election --election-type PREFERRED moves it
//     to the new first replica, and finds nothing to do for a partition
//     its preferred replica already leads;
//   - UNCLEAN: a move of a one-replica topic from 101 to 101 and 103 is
//     mid-way (103 paused, out of the ISR) when 101 dies: only UNCLEAN
//     elects 103; the move stays in flight, as on Apache. 101 stays down.
//
// The quorum must not rebalance leaders by itself
// (auto.leader.rebalance.enable=false). Topics are created with
// CreateTopics sent to a broker (forwarded to kraftd in an Envelope, as
// kafka-topics would), and progress is watched in the brokers' metadata,
// so that the JVM tools run only for what is checked of them.
func checkReassignAndElect(t *testing.T, v string, ctls []*kraftdNode, brokers *BrokerSet, at func(string)) {
	rt := &reassignTools{t: t, v: v, ctls: ctls, brokers: brokers, dir: t.TempDir()}
	rt.createTopic("moving", [][]int32{{101, 102}, {102, 101}})
	traffic := StartTraffic(t, brokers.Addrs(), "moving", 2)
	traffic.WaitProgress("start", traffic.Mark(), 100)
	rt.createTopic("bulk", [][]int32{{101, 102}})
	fillPartition(t, brokers.Addrs(), "bulk", 4<<20)
	rt.createTopic("elect", [][]int32{{101, 102, 103}})
	rt.createTopic("unclean", [][]int32{{101}})
	at("topics written, traffic running")

	t.Run("Move", func(t *testing.T) { rt.t = t; rt.checkMove(traffic) })
	at("generate/execute/verify move")
	t.Run("Cancel", func(t *testing.T) { rt.t = t; rt.checkCancel() })
	at("cancel")
	t.Run("ControllerSIGKILL", func(t *testing.T) { rt.t = t; rt.checkFailover() })
	at("move across a controller SIGKILL")
	t.Run("Preferred", func(t *testing.T) { rt.t = t; rt.checkPreferred() })
	at("preferred election")
	t.Run("Unclean", func(t *testing.T) { rt.t = t; rt.checkUnclean() })
	at("unclean election")
	n := traffic.StopAndVerify()
	at(fmt.Sprintf("%d acknowledged records all read back", n))
}

// proposedRe finds the plan --generate proposes.
var proposedRe = regexp.MustCompile(`Proposed partition reassignment configuration\s*\n(\{.*\})`)

// checkMove: --generate, --execute, --verify under traffic.
func (rt *reassignTools) checkMove(traffic *Traffic) {
	t := rt.t
	topics := rt.file("topics.json", `{"version":1,"topics":[{"topic":"moving"}]}`)
	out := rt.reassign(false, "--generate", "--topics-to-move-json-file", topics, "--broker-list", "102,103")
	t.Logf("kafka-reassign-partitions --generate:\n%s", out)
	m := proposedRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no proposed plan in %q", out)
	}
	plan := rt.file("move.json", m[1])
	mark := traffic.Mark()
	out = rt.reassign(false, "--execute", "--reassignment-json-file", plan)
	if !strings.Contains(out, "Successfully started partition reassignment") {
		t.Errorf("--execute printed %q", out)
	}
	Eventually(t, ReadyTimeout, "moving on 102 and 103", nil, func() error {
		got, isrs, err := rt.assignment("moving")
		if err != nil {
			return err
		}
		for p := range int32(2) {
			if !slices.Equal(slices.Sorted(slices.Values(got[p])), []int32{102, 103}) || !slices.Equal(isrs[p], []int32{102, 103}) {
				return fmt.Errorf("partition %d: replicas %v ISR %v", p, got[p], isrs[p])
			}
		}
		return nil
	})
	rt.verify(plan)
	traffic.WaitProgress("after the move", mark, 100)
}

// startThrottledMove moves partition 0 of topic to target at a byte a
// second, so it stays mid-way (an adding replica gets at most one fetch of
// the 4 MiB before the quota holds it), and waits until the brokers'
// metadata shows the replicas in flight.
func (rt *reassignTools) startThrottledMove(topic string, target, inFlight []int32) string {
	rt.t.Helper()
	js, _ := json.Marshal(target)
	plan := rt.file(topic+".json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":%s}]}`, topic, js))
	out := rt.reassign(false, "--execute", "--reassignment-json-file", plan, "--throttle", "1")
	if !strings.Contains(out, "Successfully started partition reassignment") {
		rt.t.Errorf("--execute --throttle printed %q", out)
	}
	Eventually(rt.t, ReadyTimeout, fmt.Sprintf("%s-0 replicas %v in flight", topic, inFlight), nil, func() error {
		got, _, err := rt.assignment(topic)
		if err != nil {
			return err
		}
		if !slices.Equal(got[0], inFlight) {
			return fmt.Errorf("replicas %v", got[0])
		}
		return nil
	})
	return plan
}

// checkCancel: a throttled move is mid-way; --cancel restores 101,102.
func (rt *reassignTools) checkCancel() {
	plan := rt.startThrottledMove("bulk", []int32{102, 103}, []int32{102, 103, 101})
	rt.waitListed("bulk-0: replicas: 102,103,101. adding: 103. removing: 101.", []int32{102, 103, 101}, []int32{103}, []int32{101})
	out := rt.reassign(true, "--cancel", "--reassignment-json-file", plan)
	rt.t.Logf("kafka-reassign-partitions --cancel:\n%s", out)
	if !strings.Contains(out, "Successfully cancelled partition reassignment for: bulk-0") {
		rt.t.Errorf("--cancel printed %q", out)
	}
	// Apache's revert keeps the replicas in their mid-move order, less the
	// ones being added: the original set, not the original order.
	rt.waitReplicas("bulk", map[int32][]int32{0: {102, 101}})
	if got := rt.listDirect(); len(got) != 0 {
		rt.t.Errorf("ListPartitionReassignments after the cancel: %+v", got)
	}
}

// checkFailover: the active kraftd dies mid-move; the next one carries on.
func (rt *reassignTools) checkFailover() {
	plan := rt.startThrottledMove("bulk", []int32{102, 103}, []int32{102, 103, 101})
	before := WaitLeader(rt.t, Addrs(rt.ctls...), nil)
	old := nodeByID(rt.ctls, before.LeaderID)
	old.Proc.Kill()
	after := WaitLeader(rt.t, Addrs(without(rt.ctls, old)...), func(s *QuorumStatus) error {
		if s.LeaderID == old.ID {
			return fmt.Errorf("still led by the killed node %d", old.ID)
		}
		return nil
	})
	rt.t.Logf("kraftd %d took over from %d at epoch %d", after.LeaderID, old.ID, after.LeaderEpoch)
	got := rt.listDirect()
	if len(got) != 1 || got[0].Topic != "bulk" || !slices.Equal(got[0].Partitions[0].AddingReplicas, []int32{103}) {
		rt.t.Fatalf("the new controller lists %+v", got)
	}
	out := rt.reassign(false, "--execute", "--additional", "--reassignment-json-file", plan, "--throttle", "1000000000")
	rt.t.Logf("kafka-reassign-partitions --execute --additional:\n%s", out)
	rt.waitReplicas("bulk", map[int32][]int32{0: {102, 103}})
	rt.verify(plan)
	restarted := time.Now()
	old.Proc.Start()
	WaitLeader(rt.t, Addrs(rt.ctls...), voterCaughtUp(old.ID, restarted, after.HighWatermark))
}

// checkPreferred: reordering elect-0's replicas to 103,101,102 completes at
// once and leaves 101 leading; PREFERRED moves leadership to 103, and
// finds nothing to do for bulk-0, whose move left its first replica
// leading.
func (rt *reassignTools) checkPreferred() {
	rt.waitLeader("elect", 101)
	plan := rt.file("reorder.json", `{"version":1,"partitions":[{"topic":"elect","partition":0,"replicas":[103,101,102]}]}`)
	rt.reassign(false, "--execute", "--reassignment-json-file", plan)
	rt.waitReplicas("elect", map[int32][]int32{0: {103, 101, 102}})
	rt.waitLeader("elect", 101)
	rt.waitLeader("bulk", 102)
	out := rt.elect("PREFERRED", "elect", "bulk")
	if !strings.Contains(out, "Successfully completed leader election (PREFERRED) for partitions elect-0") {
		rt.t.Errorf("PREFERRED printed %q", out)
	}
	if !strings.Contains(out, "Valid replica already elected for partitions bulk-0") {
		rt.t.Errorf("PREFERRED printed %q, want bulk-0 needing no election", out)
	}
	rt.waitLeader("elect", 103)
}

// checkUnclean: unclean-0 (on 101 alone) is moving to 101 and 103 (an
// AlterPartitionReassignments sent straight to kraftd) while 103 is paused
// (SIGSTOP), so 103 has fetched nothing when 101 dies; 103
// resumed is alive but out of the ISR, and only UNCLEAN elects it. The
// move stays listed until the next ISR change. 101 is left down (the
// test ends).
func (rt *reassignTools) checkUnclean() {
	t := rt.t
	b101, b103 := rt.brokers.Broker(101), rt.brokers.Broker(103)
	if err := b103.Proc.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = b103.Proc.Resume()
		}
	}()
	// Straight to the active kraftd: an admin client would wait on the
	// paused broker.
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.SetVersion(1)
	req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "unclean", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{101, 103}}}}}
	leader := WaitLeader(t, Addrs(rt.ctls...), nil)
	resp, err := Request(nodeByID(rt.ctls, leader.LeaderID).Addr(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AlterPartitionAssignmentsResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterPartitionReassignments: %+v", r)
	}
	Eventually(t, ReadyTimeout, "unclean-0 moving to 101,103", nil, func() error {
		got, isrs, err := rt.assignment("unclean")
		if err != nil {
			return err
		}
		if !slices.Equal(got[0], []int32{101, 103}) || !slices.Equal(isrs[0], []int32{101}) {
			return fmt.Errorf("replicas %v ISR %v", got[0], isrs[0])
		}
		return nil
	})
	b101.Proc.Kill()
	if err := b103.Proc.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	rt.brokers.WaitUnfenced(t, 102, 103)
	rt.waitLeader("unclean", -1)
	if out := rt.elect("UNCLEAN", "unclean"); !strings.Contains(out, "Successfully completed leader election (UNCLEAN) for partitions unclean-0") {
		t.Errorf("UNCLEAN printed %q", out)
	}
	rt.waitLeader("unclean", 103)
	// The election does not finish the move: its record is built from the
	// ISR before the election, as Apache's; the next ISR change would (101
	// fetching again), and the new leader marks itself recovered without
	// one.
	got := rt.listDirect()
	if len(got) != 1 || got[0].Topic != "unclean" || !slices.Equal(got[0].Partitions[0].Replicas, []int32{101, 103}) ||
		!slices.Equal(got[0].Partitions[0].AddingReplicas, []int32{103}) {
		t.Errorf("after the unclean election kraftd lists %+v, want unclean-0 still adding 103", got)
	}
}
