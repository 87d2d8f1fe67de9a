package compat

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Main classes of kafka-reassign-partitions and kafka-leader-election.
const (
	MainReassign       = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
	MainLeaderElection = "org.apache.kafka.tools.LeaderElectionCommand"
)

// TestReassignAndElectOnKraftd runs Apache's kafka-reassign-partitions and
// kafka-leader-election through three stock Apache brokers on one
// three-node kraftd quorum, one cluster for every check in turn:
//   - Move: --generate proposes, --execute starts and --verify waits out
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
//     to the new first replica, and a second run finds nothing to do;
//   - UNCLEAN: a partition whose only ISR member died while its other
//     replica was down gets that replica as leader from
//     --election-type UNCLEAN.
func TestReassignAndElectOnKraftd(t *testing.T) {
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 3)
		at := stamp(t)
		// No automatic preferred-leader balancing: the PREFERRED check
		// makes an imbalance and wants the tool, not the timer, to fix it.
		ctls := newKraftdStaticQuorumWith(t, 3, map[string]string{"auto.leader.rebalance.enable": "false"})
		clusterID := clusterIDOf(t, ctls[0])
		var voters []string
		for _, n := range ctls {
			voters = append(voters, fmt.Sprintf("%d@%s", n.ID, n.Addr()))
			n.start(t)
		}
		WaitLeader(t, Addrs(ctls...), nil)
		brokers := StartBrokers(t, v, strings.Join(voters, ","), clusterID, brokerIDs, nil)
		at("quorum and brokers running")
		rt := &reassignTools{t: t, v: v, ctls: ctls, brokers: brokers, dir: t.TempDir()}

		topicsTool(t, v, brokers, "--create", "--topic", "moving", "--replica-assignment", "101:102,102:101")
		brokers.WaitPartitions(t, "moving ready", "moving", fullIsr([]int32{101, 102}))
		traffic := StartTraffic(t, brokers.Addrs(), "moving", 2)
		traffic.WaitProgress("start", traffic.Mark(), 100)
		at("traffic running")
		t.Run("Move", func(t *testing.T) { rt.t = t; rt.checkMove(traffic) })
		at("generate/execute/verify move")

		topicsTool(t, v, brokers, "--create", "--topic", "bulk", "--replica-assignment", "101:102")
		brokers.WaitPartitions(t, "bulk ready", "bulk", fullIsr([]int32{101, 102}))
		fillPartition(t, brokers.Addrs(), "bulk", 4<<20)
		at("bulk written")
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
	})
}

type reassignTools struct {
	t       *testing.T
	v       string
	ctls    []*kraftdNode
	brokers *BrokerSet
	dir     string
}

// reassign runs kafka-reassign-partitions through the first running
// broker, or straight to the controllers with direct.
func (rt *reassignTools) reassign(direct bool, args ...string) string {
	rt.t.Helper()
	out, err := rt.reassignErr(direct, args...)
	if err != nil {
		rt.t.Fatalf("%v\nstdout:\n%s", err, out)
	}
	return out
}

func (rt *reassignTools) reassignErr(direct bool, args ...string) (string, error) {
	rt.t.Helper()
	bootstrap := []string{"--bootstrap-server", rt.runningBroker()}
	if direct {
		bootstrap = []string{"--bootstrap-controller", strings.Join(Addrs(rt.ctls...), ",")}
	}
	return toolOutput(rt.t, rt.v, MainReassign, append(bootstrap, args...)...)
}

func (rt *reassignTools) runningBroker() string {
	for _, b := range rt.brokers.Brokers {
		if b.Proc != nil {
			if exited, _ := b.Proc.Exited(); !exited {
				return b.Addr()
			}
		}
	}
	rt.t.Fatal("no broker is running")
	return ""
}

func (rt *reassignTools) file(name, content string) string {
	path := filepath.Join(rt.dir, name)
	writeFile(rt.t, path, []byte(content))
	return path
}

// verify runs --verify until every partition of the file is completed.
func (rt *reassignTools) verify(plan string) {
	rt.t.Helper()
	Eventually(rt.t, ReadyTimeout, "--verify reports the move completed", nil, func() error {
		out, err := rt.reassignErr(false, "--verify", "--reassignment-json-file", plan)
		if err != nil {
			return err
		}
		if strings.Contains(out, "still in progress") || !strings.Contains(out, "is completed") {
			return fmt.Errorf("--verify printed %q", out)
		}
		rt.t.Logf("kafka-reassign-partitions --verify:\n%s", out)
		return nil
	})
}

// replicas waits until each partition of topic has the given replicas, in
// order, as the brokers' metadata says, and a full ISR of them.
func (rt *reassignTools) waitReplicas(topic string, want map[int32][]int32) {
	rt.t.Helper()
	Eventually(rt.t, ReadyTimeout, fmt.Sprintf("%s replicas %v", topic, want), nil, func() error {
		got, isrs, err := rt.assignment(topic)
		if err != nil {
			return err
		}
		for p, r := range want {
			if !slices.Equal(got[p], r) || !slices.Equal(isrs[p], slices.Sorted(slices.Values(r))) {
				return fmt.Errorf("partition %d: replicas %v ISR %v", p, got[p], isrs[p])
			}
		}
		return nil
	})
}

func (rt *reassignTools) assignment(topic string) (replicas, isrs map[int32][]int32, err error) {
	m, err := rt.brokers.Metadata(topic)
	if err != nil {
		return nil, nil, err
	}
	replicas = map[int32][]int32{}
	for _, tm := range m.Resp.Topics {
		if tm.Topic != nil && *tm.Topic == topic {
			for _, p := range tm.Partitions {
				replicas[p.Partition] = p.Replicas
			}
		}
	}
	return replicas, m.Isrs[topic], nil
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
	rt.verify(plan)
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
	traffic.WaitProgress("after the move", mark, 100)
}

// fillPartition writes about size bytes to partition 0 of topic, acks=all.
func fillPartition(t *testing.T, seeds []string, topic string, size int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	value := []byte(strings.Repeat("x", 1024))
	errs := make(chan error, 1)
	for i := range size / len(value) {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatalf("writing %s: %v", topic, err)
	default:
	}
}

// startThrottledMove moves bulk-0 from 101,102 to 102,103 at a byte a
// second, so it stays mid-way (the adding replica gets at most one fetch
// of the 4 MiB before the quota holds it), and waits until the
// controllers list it.
func (rt *reassignTools) startThrottledMove() string {
	rt.t.Helper()
	plan := rt.file("bulk.json", `{"version":1,"partitions":[{"topic":"bulk","partition":0,"replicas":[102,103],"log_dirs":["any","any"]}]}`)
	out := rt.reassign(false, "--execute", "--reassignment-json-file", plan, "--throttle", "1")
	if !strings.Contains(out, "Successfully started partition reassignment") {
		rt.t.Errorf("--execute --throttle printed %q", out)
	}
	rt.waitListed("bulk-0: replicas: 102,103,101. adding: 103. removing: 101.")
	return plan
}

// waitListed waits until --list, sent straight to the controllers, prints
// want.
func (rt *reassignTools) waitListed(want string) {
	rt.t.Helper()
	Eventually(rt.t, ReadyTimeout, "--list shows "+want, nil, func() error {
		out, err := rt.reassignErr(true, "--list")
		if err != nil {
			return err
		}
		if !strings.Contains(out, want) {
			return fmt.Errorf("--list printed %q", out)
		}
		return nil
	})
}

// checkCancel: a throttled move is mid-way; --cancel restores 101,102.
func (rt *reassignTools) checkCancel() {
	plan := rt.startThrottledMove()
	if got, _, err := rt.assignment("bulk"); err != nil || !slices.Equal(got[0], []int32{102, 103, 101}) {
		rt.t.Fatalf("mid-way replicas %v (%v), want [102 103 101]", got[0], err)
	}
	out := rt.reassign(true, "--cancel", "--reassignment-json-file", plan)
	rt.t.Logf("kafka-reassign-partitions --cancel:\n%s", out)
	// Apache's revert keeps the replicas in their mid-move order, less the
	// ones being added: the original set, not the original order.
	rt.waitReplicas("bulk", map[int32][]int32{0: {102, 101}})
	rt.waitListed("No partition reassignments found.")
}

// checkFailover: the active kraftd dies mid-move; the next one carries on.
func (rt *reassignTools) checkFailover() {
	plan := rt.startThrottledMove()
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
	rt.waitListed("bulk-0: replicas: 102,103,101. adding: 103. removing: 101.")
	out := rt.reassign(false, "--execute", "--additional", "--reassignment-json-file", plan, "--throttle", "1000000000")
	rt.t.Logf("kafka-reassign-partitions --execute --additional:\n%s", out)
	rt.verify(plan)
	rt.waitReplicas("bulk", map[int32][]int32{0: {102, 103}})
	old.Proc.Start()
	WaitLeader(rt.t, Addrs(rt.ctls...), voterCaughtUp(old.ID, time.Now().Add(-time.Second), after.HighWatermark))
}

// elect runs kafka-leader-election through a running broker.
func (rt *reassignTools) elect(typ, topic string) string {
	rt.t.Helper()
	out, err := toolOutput(rt.t, rt.v, MainLeaderElection, "--bootstrap-server", rt.runningBroker(),
		"--election-type", typ, "--topic", topic, "--partition", "0")
	if err != nil {
		rt.t.Fatalf("%v\nstdout:\n%s", err, out)
	}
	rt.t.Logf("kafka-leader-election --election-type %s:\n%s", typ, out)
	return out
}

func (rt *reassignTools) waitLeader(topic string, want int32) {
	rt.t.Helper()
	Eventually(rt.t, ReadyTimeout, fmt.Sprintf("%s-0 led by %d", topic, want), nil, func() error {
		m, err := rt.brokers.Metadata(topic)
		if err != nil {
			return err
		}
		if l := m.Leaders[topic][0]; l != want {
			return fmt.Errorf("led by %d", l)
		}
		return nil
	})
}

// checkPreferred: reordering elect-0's replicas to 103,101,102 completes at
// once and leaves 101 leading; PREFERRED moves leadership to 103.
func (rt *reassignTools) checkPreferred() {
	topicsTool(rt.t, rt.v, rt.brokers, "--create", "--topic", "elect", "--replica-assignment", "101:102:103")
	rt.brokers.WaitPartitions(rt.t, "elect ready", "elect", fullIsr([]int32{101, 102, 103}))
	rt.waitLeader("elect", 101)
	plan := rt.file("reorder.json", `{"version":1,"partitions":[{"topic":"elect","partition":0,"replicas":[103,101,102]}]}`)
	rt.reassign(false, "--execute", "--reassignment-json-file", plan)
	rt.waitReplicas("elect", map[int32][]int32{0: {103, 101, 102}})
	rt.waitLeader("elect", 101)
	if out := rt.elect("PREFERRED", "elect"); !strings.Contains(out, "Successfully completed leader election (PREFERRED) for partitions elect-0") {
		rt.t.Errorf("PREFERRED printed %q", out)
	}
	rt.waitLeader("elect", 103)
	if out := rt.elect("PREFERRED", "elect"); !strings.Contains(out, "Valid replica already elected for partitions elect-0") {
		rt.t.Errorf("second PREFERRED printed %q", out)
	}
}

// checkUnclean: unclean-0 lives on 101 and 102. 102 dies (the ISR shrinks
// to 101), then 101 (no leader), then 102 comes back, out of the ISR: only
// UNCLEAN elects it. 101 is left down (the test ends).
func (rt *reassignTools) checkUnclean() {
	t := rt.t
	topicsTool(t, rt.v, rt.brokers, "--create", "--topic", "unclean", "--replica-assignment", "101:102")
	rt.brokers.WaitPartitions(t, "unclean ready", "unclean", fullIsr([]int32{101, 102}))
	b101, b102 := rt.brokers.Broker(101), rt.brokers.Broker(102)
	b102.Proc.Kill()
	rt.brokers.WaitUnfenced(t, 101, 103)
	rt.brokers.WaitPartitions(t, "unclean-0 shrunk to 101", "unclean", func(_, leader int32, isr []int32) error {
		if leader != 101 || !slices.Equal(isr, []int32{101}) {
			return fmt.Errorf("want leader 101, ISR [101]")
		}
		return nil
	})
	b101.Proc.Kill()
	rt.brokers.WaitUnfenced(t, 103)
	b102.Start(t)
	rt.brokers.WaitUnfenced(t, 102, 103)
	rt.waitLeader("unclean", -1)
	if out := rt.elect("UNCLEAN", "unclean"); !strings.Contains(out, "Successfully completed leader election (UNCLEAN) for partitions unclean-0") {
		t.Errorf("UNCLEAN printed %q", out)
	}
	rt.waitLeader("unclean", 102)
	// 101 stays down: nothing after this check needs it.
}
