package compat

import (
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"
)

// checkReadiness stops (SIGSTOP) the leader's two followers: its /readyz
// turns not ready, and every node is ready again once they continue. Then
// it stops the leader and one follower: the other follower turns not
// ready, and stays so (alone, it cannot be elected); once the stopped
// follower continues, the two elect another leader and are ready while
// the old leader is still stopped, and so is the old leader once it
// continues. It returns the leader it stopped and the follower that saw it
// stop. Every state it waits for holds until seen: none is a transient
// that a slow poll on a loaded machine could miss.
func checkReadiness(t *testing.T, nodes []*metricsNode, leader *metricsNode) (stopped, orphan *metricsNode) {
	t.Helper()
	// The leader loses its quorum: both followers stop.
	var followers []*metricsNode
	for _, n := range nodes {
		if n != leader {
			followers = append(followers, n)
		}
	}
	paused := pauseAll(t, followers...)
	resume := func() { resumeAll(followers...) }
	defer resume()
	r := waitNotReady(t, leader)
	t.Logf("leader %d not ready %v after its followers stopped: %s", leader.ID, time.Since(paused).Round(time.Millisecond), r.Reason)
	resume()
	back := time.Now()
	waitReady(t, nodes, ReadyTimeout)
	t.Logf("all three ready %v after the followers continued", time.Since(back).Round(time.Millisecond))

	// The followers lose their leader: it stops, and so does one of them,
	// so that the other cannot be elected and stays not ready until seen.
	// Once the stopped follower continues, the two elect another among
	// themselves and are ready again while the old leader is still stopped.
	leader = readyLeaderOf(t, nodes)
	var rest []*metricsNode
	for _, n := range nodes {
		if n != leader {
			rest = append(rest, n)
		}
	}
	orphan, asleep := rest[0], rest[1]
	paused = pauseAll(t, leader, asleep)
	defer resumeAll(leader, asleep)
	r = waitNotReady(t, orphan)
	t.Logf("follower %d not ready %v after leader %d and follower %d stopped: %s", orphan.ID, time.Since(paused).Round(time.Millisecond), leader.ID, asleep.ID, r.Reason)
	resumeAll(asleep)
	back = time.Now()
	waitReady(t, rest, ReadyTimeout)
	t.Logf("followers %d and %d ready %v after %d continued, leader %d still stopped", orphan.ID, asleep.ID, time.Since(back).Round(time.Millisecond), asleep.ID, leader.ID)
	resumeAll(leader)
	waitReady(t, nodes, ReadyTimeout)
	var roles []string
	for _, n := range nodes {
		r, _, _ := n.readyz()
		roles = append(roles, fmt.Sprintf("%d:%s", n.ID, r.Role))
	}
	sort.Strings(roles)
	t.Logf("roles after the old leader continued: %v", roles)
	return leader, orphan
}

// pauseAll stops (SIGSTOP) the nodes' processes and returns when.
func pauseAll(t *testing.T, nodes ...*metricsNode) time.Time {
	t.Helper()
	for _, n := range nodes {
		if err := n.Proc.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	return time.Now()
}

// resumeAll continues (SIGCONT) the nodes' processes; continuing a running
// process does nothing, so it may be called again.
func resumeAll(nodes ...*metricsNode) {
	for _, n := range nodes {
		n.Proc.Resume()
	}
}

// waitNotReady waits until n's /readyz answers not ready (503), a state
// the caller holds, and returns the answer.
func waitNotReady(t *testing.T, n *metricsNode) readiness {
	t.Helper()
	var last readiness
	Eventually(t, ReadyTimeout, fmt.Sprintf("node %d not ready", n.ID), nil, func() error {
		r, code, err := n.readyz()
		if err != nil {
			return err
		}
		if r.Ready || code != http.StatusServiceUnavailable {
			return fmt.Errorf("ready %v (HTTP %d): %s", r.Ready, code, r.Reason)
		}
		last = r
		return nil
	})
	return last
}
