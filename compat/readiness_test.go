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
// it stops the leader: its followers turn not ready, elect another and are
// ready again, and so is the old leader once it continues. It returns the
// leader it stopped.
func checkReadiness(t *testing.T, nodes []*metricsNode, leader *metricsNode) *metricsNode {
	t.Helper()
	// The leader loses its quorum: both followers stop.
	var followers []*metricsNode
	for _, n := range nodes {
		if n != leader {
			followers = append(followers, n)
		}
	}
	for _, f := range followers {
		if err := f.Proc.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	paused := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			for _, f := range followers {
				f.Proc.Resume()
			}
		}
	}
	defer resume()
	var lost readiness
	for {
		r, code, err := leader.readyz()
		if err == nil && !r.Ready && code == http.StatusServiceUnavailable {
			lost = r
			break
		}
		// A generous bound for a loaded machine; the figure is printed.
		if time.Since(paused) > 30*time.Second {
			t.Fatalf("leader %d still ready 30 s after its followers stopped: %+v", leader.ID, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("leader %d not ready %v after its followers stopped: %s", leader.ID, time.Since(paused).Round(time.Millisecond), lost.Reason)
	resume()
	back := time.Now()
	waitReady(t, nodes, 60*time.Second)
	t.Logf("all three ready %v after the followers continued", time.Since(back).Round(time.Millisecond))

	// The followers lose their leader: it stops. They turn not ready,
	// elect another among themselves, and are ready again while the old
	// leader is still stopped.
	leader = readyLeaderOf(t, nodes)
	if err := leader.Proc.Pause(); err != nil {
		t.Fatal(err)
	}
	defer leader.Proc.Resume()
	paused = time.Now()
	var rest []*metricsNode
	for _, n := range nodes {
		if n != leader {
			rest = append(rest, n)
		}
	}
	for {
		r, code, err := rest[0].readyz()
		if err == nil && !r.Ready && code == http.StatusServiceUnavailable {
			t.Logf("follower %d not ready %v after leader %d stopped: %s", rest[0].ID, time.Since(paused).Round(time.Millisecond), leader.ID, r.Reason)
			break
		}
		if time.Since(paused) > 30*time.Second {
			t.Fatalf("follower %d still ready 30 s after leader %d stopped: %+v", rest[0].ID, leader.ID, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitReady(t, rest, 60*time.Second)
	t.Logf("the two others ready %v after leader %d stopped", time.Since(paused).Round(time.Millisecond), leader.ID)
	leader.Proc.Resume()
	waitReady(t, nodes, 60*time.Second)
	var roles []string
	for _, n := range nodes {
		r, _, _ := n.readyz()
		roles = append(roles, fmt.Sprintf("%d:%s", n.ID, r.Role))
	}
	sort.Strings(roles)
	t.Logf("roles after the old leader continued: %v", roles)
	return leader
}
