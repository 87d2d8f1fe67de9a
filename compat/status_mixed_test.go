package compat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// mixedStatus is the part of `kraftd status --json` checkStatusMixed reads.
type mixedStatus struct {
	LeaderID    int32 `json:"leader_id"`
	LeaderEpoch int32 `json:"leader_epoch"`
	Probes      []struct {
		ID        int32  `json:"id"`
		Reachable bool   `json:"reachable"`
		Role      string `json:"role"`
		Epoch     int32  `json:"epoch"`
		LeaderID  int32  `json:"leader_id"`
		ClusterID string `json:"cluster_id"`
		Supported string `json:"supported_metadata_version"`
	} `json:"probes"`
	Diagnosis struct {
		State   string `json:"state"`
		Summary string `json:"summary"`
	} `json:"diagnosis"`
}

var statusRuns atomic.Int32

// kraftdStatus runs `kraftd status` to its end and returns its output and
// exit code.
func kraftdStatus(t *testing.T, args ...string) (string, int) {
	t.Helper()
	p := StartKraftd(t, fmt.Sprintf("kraftd-status-%d", statusRuns.Add(1)), append([]string{"status", "--timeout", "2s"}, args...)...)
	err := p.Wait(ReadyTimeout)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return p.Output(), 0
	case errors.As(err, &exit):
		return p.Output(), exit.ExitCode()
	}
	t.Fatalf("kraftd status: %v\n%s", err, p.Output())
	return "", -1
}

// checkStatusMixed runs `kraftd status` against a quorum of kraftd and
// Apache controllers: each answers its own line, Apache's too (a
// follower's epoch and leader from the Fetch it refuses, its cluster id
// from DescribeCluster), and the quorum is healthy (exit 0). Then, with
// an Apache follower paused, it is degraded (exit 1) naming that voter.
func checkStatusMixed(t *testing.T, members []*MixedMember, clusterID string) {
	t.Helper()
	addrs := strings.Join(MixedAddrs(members...), ",")
	var st mixedStatus
	var out string
	Eventually(t, ReadyTimeout, "kraftd status: healthy, every controller's own line", nil, func() error {
		var code int
		out, code = kraftdStatus(t, "--bootstrap-controller", addrs, "--json")
		st = mixedStatus{}
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &st); err != nil || code != 0 {
			return fmt.Errorf("exit %d (%v):\n%s", code, err, out)
		}
		if len(st.Probes) != len(members) {
			return fmt.Errorf("%d controllers, want %d:\n%s", len(st.Probes), len(members), out)
		}
		for _, p := range st.Probes {
			role := "follower"
			if p.ID == st.LeaderID {
				role = "leader"
			}
			if !p.Reachable || p.Role != role || p.Epoch != st.LeaderEpoch || p.LeaderID != st.LeaderID || p.ClusterID != clusterID || p.Supported == "unknown" {
				return fmt.Errorf("controller %d (%s): %+v:\n%s", p.ID, MemberByID(members, p.ID), p, out)
			}
		}
		return nil
	})
	t.Logf("kraftd status against %d controllers, leader %s:\n%s", len(members), MemberByID(members, st.LeaderID), out)

	var follower *MixedMember
	for _, m := range members {
		if m.Kind == KindApache && m.ID != st.LeaderID {
			follower = m
		}
	}
	if follower == nil {
		t.Logf("no Apache follower to pause: the one Apache controller leads")
		return
	}
	if err := follower.Proc().Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { follower.Proc().Resume() })
	want := fmt.Sprintf("voter %d (%s) is down: no answer within 2s", follower.ID, follower.Addr())
	Eventually(t, ReadyTimeout, "kraftd status: degraded, naming the paused Apache voter", nil, func() error {
		out, code := kraftdStatus(t, "--bootstrap-controller", addrs)
		if code != 1 || !strings.Contains(out, want) {
			return fmt.Errorf("exit %d, want 1 and %q:\n%s", code, want, out)
		}
		return nil
	})
	if err := follower.Proc().Resume(); err != nil {
		t.Fatal(err)
	}
}
