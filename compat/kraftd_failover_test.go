package compat

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// TestKraftdFailoverAfterSIGKILL kills the leader of three kraftd processes
// (default timeouts: fetch timeout 2000 ms) several times and checks that
// the other two elect a new leader that commits, each time. The followers
// see the dead process's connections closed and its port refusing, and
// need not wait out the fetch timeout. The kill-to-commit times are logged,
// not asserted on: a loaded machine may take longer.
func TestKraftdFailoverAfterSIGKILL(t *testing.T) {
	t.Parallel()
	nodes := newKraftdStaticQuorum(t, 3)
	for _, n := range nodes {
		n.start(t)
	}
	defer func() {
		for _, n := range nodes {
			n.Proc.Stop()
		}
	}()
	const kills = 5
	var took []time.Duration
	for i := range kills {
		cur := WaitLeader(t, Addrs(nodes...), func(s *QuorumStatus) error {
			if len(s.Voters) != 3 || s.HighWatermark < 3 {
				return fmt.Errorf("voters %v, high watermark %d", s.Voters, s.HighWatermark)
			}
			for _, v := range s.Resp.Topics[0].Partitions[0].CurrentVoters {
				if v.LogEndOffset < s.HighWatermark {
					return fmt.Errorf("voter %d not caught up", v.ReplicaID)
				}
			}
			return nil
		})
		old := nodeByID(nodes, cur.LeaderID)
		killed := time.Now()
		old.Proc.Kill()
		next := waitNewLeader(t, without(nodes, old), cur)
		took = append(took, next.at.Sub(killed))
		t.Logf("kill %d: leader %d (epoch %d) SIGKILLed; leader %d committed in epoch %d after %v",
			i+1, old.ID, cur.LeaderEpoch, next.LeaderID, next.LeaderEpoch, took[i].Round(time.Millisecond))
		old.start(t)
	}
	sort.Slice(took, func(a, b int) bool { return took[a] < took[b] })
	t.Logf("kill to new leader's first commit over %d kills: min %v, median %v, max %v", kills,
		took[0].Round(time.Millisecond), took[kills/2].Round(time.Millisecond), took[kills-1].Round(time.Millisecond))
}

type timedStatus struct {
	*QuorumStatus
	at time.Time
}

// waitNewLeader polls the survivors every 2 ms until one leads a later
// epoch than was and has committed past its high watermark (its
// LeaderChange at least): the first write the new leader acknowledges.
func waitNewLeader(t *testing.T, survivors []*kraftdNode, was *QuorumStatus) timedStatus {
	t.Helper()
	deadline := time.Now().Add(ReadyTimeout)
	for {
		s, err := leaderAmong(Addrs(survivors...), func(s *QuorumStatus) error {
			if s.LeaderEpoch <= was.LeaderEpoch || s.HighWatermark <= was.HighWatermark {
				return fmt.Errorf("leader %d epoch %d high watermark %d", s.LeaderID, s.LeaderEpoch, s.HighWatermark)
			}
			return nil
		})
		if err == nil {
			return timedStatus{s, time.Now()}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader after the SIGKILL of leader %d: %v", was.LeaderID, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
