package compat

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kraftd/kraftd/storage/batch"
)

// kraftdNode is one kraftd controller of a test quorum.
type kraftdNode struct {
	ID   int32
	Port int
	Dir  string
	Conf string
	Proc *Process
}

func (n *kraftdNode) Addr() string { return Addr(n.Port) }

// newKraftdStaticQuorum writes configs for count kraftd controllers with a
// static voter set and formats their directories with `kraftd format` at
// brokerQuorumRelease (4.1-IV1), a level the 4.1.2 brokers some tests start
// on it support.
func newKraftdStaticQuorum(t *testing.T, count int) []*kraftdNode {
	t.Helper()
	return newKraftdStaticQuorumWith(t, count, nil)
}

// newKraftdStaticQuorumWith is newKraftdStaticQuorum with extra settings
// in every node's config.
func newKraftdStaticQuorumWith(t *testing.T, count int, extra map[string]string) []*kraftdNode {
	t.Helper()
	ports := FreePorts(t, count)
	var voters []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, Addr(p)))
	}
	clusterID := NewUUID()
	var nodes []*kraftdNode
	for i, p := range ports {
		n := &kraftdNode{ID: int32(i + 1), Port: p, Dir: filepath.Join(t.TempDir(), "metadata")}
		props := map[string]string{"controller.quorum.voters": strings.Join(voters, ",")}
		maps.Copy(props, extra)
		n.Conf = WriteKraftdConfig(t, n.ID, Addr(p), n.Dir, props)
		format := NewProcess(t, fmt.Sprintf("kraftd-format-%d", n.ID), KraftdBinary(t), "format", "--config", n.Conf, "--cluster-id", clusterID,
			"--release-version", brokerQuorumRelease)
		format.Start()
		if err := format.Wait(time.Minute); err != nil {
			t.Fatalf("format node %d: %v\n%s", n.ID, err, format.Output())
		}
		nodes = append(nodes, n)
	}
	return nodes
}

func (n *kraftdNode) start(t *testing.T) {
	t.Helper()
	n.Proc = StartKraftd(t, fmt.Sprintf("kraftd-%d", n.ID), "--log-format", "json", "--log-level", "debug", "start", "--config", n.Conf)
}

// startRace starts the node from the race-detector build.
func (n *kraftdNode) startRace(t *testing.T) {
	t.Helper()
	n.Proc = StartProcess(t, fmt.Sprintf("kraftd-%d", n.ID), KraftdRaceBinary(t), "--log-format", "json", "--log-level", "debug", "start", "--config", n.Conf)
}

func nodeByID(nodes []*kraftdNode, id int32) *kraftdNode {
	for _, n := range nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// TestKraftdThreeNodeQuorum runs three kraftd processes, built with the race
// detector: they elect a leader
// and replicate; SIGKILL of the leader yields a new leader that lost nothing
// committed; the killed node comes back as a follower and catches up; a
// graceful stop of the leader hands over through EndQuorumEpoch.
func TestKraftdThreeNodeQuorum(t *testing.T) {
	t.Parallel()
	nodes := newKraftdStaticQuorum(t, 3)
	// These processes run under the race detector: a data race in the
	// node, the server or the peer client fails the test (checked below).
	for _, n := range nodes {
		n.startRace(t)
	}
	defer func() {
		for _, n := range nodes {
			if strings.Contains(n.Proc.Output(), "WARNING: DATA RACE") {
				t.Errorf("node %d hit a data race:\n%s", n.ID, n.Proc.Output())
			}
		}
	}()
	// The leader writes a NoOp every 500 ms, so the high watermark climbs.
	first := WaitLeader(t, Addrs(nodes...), func(s *QuorumStatus) error {
		if len(s.Voters) != 3 || s.HighWatermark < 5 {
			return fmt.Errorf("voters %v, high watermark %d", s.Voters, s.HighWatermark)
		}
		return nil
	})
	old := nodeByID(nodes, first.LeaderID)
	committed := first.HighWatermark
	t.Logf("leader %d at epoch %d, high watermark %d", first.LeaderID, first.LeaderEpoch, committed)

	old.Proc.Kill()
	rest := without(nodes, old)
	second := WaitLeader(t, Addrs(rest...), func(s *QuorumStatus) error {
		if s.LeaderID == old.ID || s.LeaderEpoch <= first.LeaderEpoch || s.HighWatermark <= committed {
			return fmt.Errorf("leader %d epoch %d high watermark %d", s.LeaderID, s.LeaderEpoch, s.HighWatermark)
		}
		return nil
	})
	t.Logf("after SIGKILL: leader %d at epoch %d, high watermark %d", second.LeaderID, second.LeaderEpoch, second.HighWatermark)

	old.startRace(t)
	caughtUp := WaitLeader(t, Addrs(nodes...), func(s *QuorumStatus) error {
		for _, v := range s.Resp.Topics[0].Partitions[0].CurrentVoters {
			if v.ReplicaID == old.ID && v.LogEndOffset >= second.HighWatermark {
				return nil
			}
		}
		return fmt.Errorf("node %d not caught up to %d yet", old.ID, second.HighWatermark)
	})
	t.Logf("restarted node %d caught up under leader %d", old.ID, caughtUp.LeaderID)

	leader := nodeByID(nodes, caughtUp.LeaderID)
	if err := leader.Proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := leader.Proc.Wait(30 * time.Second); err != nil {
		leader.Proc.QuitThenKill() // its goroutines' stacks, in the log below
		t.Fatalf("graceful stop of node %d: %v", leader.ID, err)
	}
	var others []*kraftdNode
	for _, n := range nodes {
		if n != leader {
			others = append(others, n)
		}
	}
	third := WaitLeader(t, Addrs(others...), func(s *QuorumStatus) error {
		if s.LeaderEpoch <= caughtUp.LeaderEpoch {
			return fmt.Errorf("epoch %d", s.LeaderEpoch)
		}
		return nil
	})
	// A successor that starts its election because of EndQuorumEpoch, not
	// because its fetch timeout ran out, says so in its log.
	sawResignation := false
	for _, n := range others {
		sawResignation = sawResignation || strings.Contains(n.Proc.Output(), "EndQuorumEpoch")
	}
	if !sawResignation {
		t.Errorf("no follower logged receiving EndQuorumEpoch from the resigning leader %d", leader.ID)
	}
	t.Logf("after graceful stop: leader %d at epoch %d", third.LeaderID, third.LeaderEpoch)

	for _, n := range others {
		n.Proc.Stop()
	}
	// Every record committed under the first leader is on every node, byte
	// for byte.
	want := committedBatches(t, nodes[0].Dir, committed)
	for _, n := range nodes[1:] {
		got := committedBatches(t, n.Dir, committed)
		if !bytes.Equal(got, want) {
			t.Errorf("node %d holds different committed batches below offset %d than node 1", n.ID, committed)
		}
	}
}

// committedBatches returns the batches below offset in a node's segments.
func committedBatches(t *testing.T, dir string, below int64) []byte {
	t.Helper()
	segments, _ := filepath.Glob(filepath.Join(dir, "__cluster_metadata-0", "*.log"))
	sort.Strings(segments)
	var out []byte
	for _, seg := range segments {
		raw, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := batch.Walk(raw, func(h batch.Header, b []byte) error {
			if h.LastOffset() < below {
				out = append(out, b...)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", seg, err)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no batches below %d", dir, below)
	}
	return out
}
