package compat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recoverBroker is the Apache release of the broker the recovery tests run.
const recoverBroker = "4.4.0"

// TestRecoverLostMajority runs three kraftd controllers (a static quorum)
// with a stock Apache 4.4.0 broker and a topic written with acks=all, then
// loses two controllers with their directories for good:
//   - `kraftd recover` refuses while the survivor runs, and without its
//     confirmation flag, reporting what the directory holds;
//   - with it, the survivor starts as the only voter of a dynamic quorum in
//     an epoch a million above the old one; the broker reconnects, every
//     acknowledged record is read back, and a topic can be created;
//   - the lost controllers come back with their old directories and
//     configurations: they never lead again, the survivor stays the leader
//     in its epoch, and the broker's metadata keeps following it;
//   - then every controller is lost: `kraftd recover --from-broker-dir`
//     rebuilds one from the broker's metadata copy, and the broker follows
//     it with every record and topic.
func TestRecoverLostMajority(t *testing.T) {
	t.Parallel()
	at := stamp(t)
	ctls, brokers := startRecoverCluster(t)
	broker := brokers.Brokers[0]
	CreateTopic(t, broker.Addr(), "acked", 3, 1, nil)
	acked := produceAcked(t, broker.Addr(), "acked", 300)
	at("three kraftd controllers, an Apache broker and 300 acknowledged records")

	// The survivor is the leader: the lost voters hold nothing it lacks
	// (docs/operations.md says what a survivor that lags loses).
	cur := WaitLeader(t, Addrs(ctls...), nil)
	survivor := nodeByID(ctls, cur.LeaderID)
	lost := slices.DeleteFunc(slices.Clone(ctls), func(n *kraftdNode) bool { return n == survivor })
	for _, n := range lost {
		n.Proc.Kill()
		// The disk is gone; it comes back in the fence check below.
		if err := os.Rename(n.Dir, n.Dir+".old"); err != nil {
			t.Fatal(err)
		}
	}
	out, code := runRecover(t, survivor.Conf, "--yes-i-lost-the-majority")
	if code != 2 || !strings.Contains(out, "in use") {
		t.Fatalf("recover beside the running node: exit %d, want 2 naming the lock:\n%s", code, out)
	}
	survivor.Proc.Kill()
	out, code = runRecover(t, survivor.Conf)
	if code != 2 || !strings.Contains(out, "proven committed:") || !strings.Contains(out, "--yes-i-lost-the-majority") {
		t.Fatalf("recover without confirmation: exit %d, want 2 with the report:\n%s", code, out)
	}
	out, code = runRecover(t, survivor.Conf, "--yes-i-lost-the-majority")
	if code != 0 {
		t.Fatalf("recover: exit %d:\n%s", code, out)
	}
	t.Logf("kraftd recover:\n%s", out)
	survivor.start(t)
	rec := WaitLeader(t, []string{survivor.Addr()}, soleVoterAbove(survivor.ID, cur.LeaderEpoch))
	at(fmt.Sprintf("recovered: node %d leads epoch %d alone", rec.LeaderID, rec.LeaderEpoch))
	CreateTopic(t, broker.Addr(), "after-recovery", 1, 1, nil)
	checkConsumed(t, broker.Addr(), "acked", acked)
	at("the broker follows it, every acknowledged record read back")

	checkFenced(t, survivor, lost, rec, broker)
	at("old voters back with their old directories are fenced")

	rebuilt := checkFromBroker(t, ctls, rec, broker)
	checkConsumed(t, broker.Addr(), "acked", acked)
	at(fmt.Sprintf("all controllers lost; node %d rebuilt from the broker's copy leads epoch %d", rebuilt.LeaderID, rebuilt.LeaderEpoch))
}

// checkFromBroker loses every controller with its directory, rebuilds
// one lost in the first round (so not in the recovered voter set) from
// the broker's metadata copy with its own configuration (its id and
// address, which the broker knows), and checks the broker follows it.
func checkFromBroker(t *testing.T, ctls []*kraftdNode, rec *QuorumStatus, broker *ApacheBroker) *QuorumStatus {
	t.Helper()
	for _, n := range ctls {
		n.Proc.Kill()
		if err := os.RemoveAll(n.Dir); err != nil {
			t.Fatal(err)
		}
	}
	n := ctls[0]
	if n.ID == rec.LeaderID {
		n = ctls[1]
	}
	out, code := runRecover(t, n.Conf, "--from-broker-dir", broker.Dir, "--yes-i-lost-the-majority")
	if code != 0 {
		t.Fatalf("recover --from-broker-dir: exit %d:\n%s", code, out)
	}
	t.Logf("kraftd recover --from-broker-dir:\n%s", out)
	n.start(t)
	st := WaitLeader(t, []string{n.Addr()}, soleVoterAbove(n.ID, rec.LeaderEpoch))
	CreateTopic(t, broker.Addr(), "after-broker-recovery", 1, 1, nil)
	m, err := Metadata(broker.Addr(), "after-recovery", "after-fence")
	if err != nil || len(m.Leaders["after-recovery"]) != 1 || len(m.Leaders["after-fence"]) != 1 {
		t.Fatalf("topics created before the rebuild: %+v, %v", m, err)
	}
	return st
}

// checkFenced brings the lost controllers back with their old directories
// and configurations and checks that they never form a second quorum: for
// a while every controller that answers as leader is the survivor in the
// recovered epoch; then metadata still flows through the broker.
func checkFenced(t *testing.T, survivor *kraftdNode, lost []*kraftdNode, rec *QuorumStatus, broker *ApacheBroker) {
	t.Helper()
	for _, n := range lost {
		if err := os.Rename(n.Dir+".old", n.Dir); err != nil {
			t.Fatal(err)
		}
		n.start(t)
	}
	onlyLeader(t, Addrs(append([]*kraftdNode{survivor}, lost...)...), rec)
	s, err := DescribeQuorum(survivor.Addr())
	if err != nil || !slices.Equal(s.Voters, []int32{survivor.ID}) {
		t.Fatalf("the survivor after the old voters came back: %+v, %v", s, err)
	}
	saysNoVoter(t, lost)
	createAndSee(t, broker, "after-fence")
}

// startRecoverCluster starts three kraftd controllers (a static quorum)
// and an Apache broker on them.
func startRecoverCluster(t *testing.T) ([]*kraftdNode, *BrokerSet) {
	t.Helper()
	ReserveJVMs(t, 1)
	ctls := newKraftdStaticQuorum(t, 3)
	var voters []string
	for _, n := range ctls {
		n.start(t)
		voters = append(voters, fmt.Sprintf("%d@%s", n.ID, n.Addr()))
	}
	WaitLeader(t, Addrs(ctls...), nil)
	return ctls, StartBrokers(t, recoverBroker, strings.Join(voters, ","), clusterIDOf(t, ctls[0]), []int{101}, nil)
}

// createAndSee creates topic through the broker and waits until the
// broker's metadata has it.
func createAndSee(t *testing.T, broker *ApacheBroker, topic string) {
	t.Helper()
	CreateTopic(t, broker.Addr(), topic, 1, 1, nil)
	Eventually(t, ReadyTimeout, "the broker sees topic "+topic, broker.Proc, func() error {
		m, err := Metadata(broker.Addr(), topic)
		if err != nil || len(m.Leaders[topic]) != 1 {
			return fmt.Errorf("leaders %v, %v", m, err)
		}
		return nil
	})
}

// saysNoVoter waits until each old voter logged that it no longer stands
// (an observer of the recovered quorum), or stopped on a log that
// diverged below its high watermark (it had committed in an old epoch).
func saysNoVoter(t *testing.T, old []*kraftdNode) {
	t.Helper()
	for _, n := range old {
		Eventually(t, time.Minute, fmt.Sprintf("old voter %d says it is no voter", n.ID), nil, func() error {
			if out := n.Proc.Output(); strings.Contains(out, "not a voter any more") || strings.Contains(out, "truncate") {
				return nil
			}
			return errorf("no such line yet")
		})
	}
}

// onlyLeader watches the controllers at addrs for several election
// timeouts of old voters (1 to 2 s by default): every one that answers
// DescribeQuorum as leader must be rec's leader in rec's epoch.
func onlyLeader(t *testing.T, addrs []string, rec *QuorumStatus) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for _, a := range addrs {
			s, err := DescribeQuorum(a)
			if err != nil || s.LeaderID < 0 {
				continue // not a leader (NOT_LEADER_OR_FOLLOWER), or down
			}
			if s.LeaderID != rec.LeaderID || s.LeaderEpoch != rec.LeaderEpoch {
				t.Fatalf("%s answers as leader %d in epoch %d: a second quorum beside node %d's epoch %d", a, s.LeaderID, s.LeaderEpoch, rec.LeaderID, rec.LeaderEpoch)
			}
		}
	}
}

// runRecover runs `kraftd recover --config conf args...` and returns its
// output and exit code.
func runRecover(t *testing.T, conf string, args ...string) (string, int) {
	t.Helper()
	return runKraftd(t, append([]string{"recover", "--config", conf}, args...)...)
}

// runKraftd runs a kraftd command to its end (JSON logs), with its output
// and exit code.
func runKraftd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(KraftdBinary(t), append([]string{"--log-format", "json"}, args...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("kraftd %s: %v", args[0], err)
	return "", 0
}

// produceAcked writes n records to topic through the broker with acks=all,
// one at a time, and returns the values the broker acknowledged.
func produceAcked(t *testing.T, addr, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var acked []string
	for i := range n {
		v := fmt.Sprintf("%s-%d", topic, i)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		acked = append(acked, v)
	}
	return acked
}

// checkConsumed reads topic from the start through the broker until every
// value of want was read.
func checkConsumed(t *testing.T, addr, topic string, want []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	missing := map[string]bool{}
	for _, v := range want {
		missing[v] = true
	}
	Eventually(t, ReadyTimeout, fmt.Sprintf("read back %d acknowledged records of %s", len(want), topic), nil, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fetches := cl.PollFetches(ctx)
		for _, r := range fetches.Records() {
			delete(missing, string(r.Value))
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d of %d not read yet (fetch errors %v)", len(missing), len(want), fetches.Errors())
		}
		return nil
	})
}
