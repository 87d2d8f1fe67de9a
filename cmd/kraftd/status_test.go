//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kraftd/kraftd/internal/loopback"
	"github.com/kraftd/kraftd/internal/nemesis"
)

// statusJSON is the part of `kraftd status --json` the tests read; the
// field names are the documented ones (docs/operations.md).
type statusJSON struct {
	ClusterID   string `json:"cluster_id"`
	LeaderID    int32  `json:"leader_id"`
	LeaderEpoch int32  `json:"leader_epoch"`
	VoterSource string `json:"voter_source"`
	Voters      []struct {
		ID int32 `json:"id"`
	} `json:"voters"`
	Probes []struct {
		Address            string `json:"address"`
		ID                 int32  `json:"id"`
		Voter              bool   `json:"voter"`
		Reachable          bool   `json:"reachable"`
		Error              string `json:"error"`
		Role               string `json:"role"`
		Epoch              int32  `json:"epoch"`
		LeaderID           int32  `json:"leader_id"`
		LogEndOffset       int64  `json:"log_end_offset"`
		Lag                int64  `json:"lag"`
		LeaderContactAgeMs int64  `json:"leader_contact_age_ms"`
		ClusterID          string `json:"cluster_id"`
		Supported          string `json:"supported_metadata_version"`
	} `json:"probes"`
	Diagnosis struct {
		State    string          `json:"state"`
		ExitCode int             `json:"exit_code"`
		Summary  string          `json:"summary"`
		Problems []statusProblem `json:"problems"`
	} `json:"diagnosis"`
}

type statusProblem struct {
	Kind string `json:"kind"`
	Node int32  `json:"node"`
}

// runStatusUntil runs `kraftd status` until it exits with want and prints
// text (the quorum of a loaded machine may be between leaders for a
// moment, a controller slow to answer), for up to a minute, and returns
// its output.
func runStatusUntil(t *testing.T, bin string, want int, text string, args ...string) string {
	t.Helper()
	start := time.Now()
	deadline := start.Add(time.Minute)
	for tries := 1; ; tries++ {
		out, code := run(t, bin, append([]string{"status", "--timeout", "2s"}, args...)...)
		if code == want && strings.Contains(out, text) {
			t.Logf("exit %d with %q after %d runs, %.1f s", want, text, tries, time.Since(start).Seconds())
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("kraftd status %v: exit %d, want %d and %q:\n%s", args, code, want, text, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func decodeStatus(t *testing.T, out string) statusJSON {
	t.Helper()
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("kraftd status --json: %v\n%s", err, out)
	}
	return st
}

// TestStatusBadDay runs `kraftd status` against a real three-node kraftd
// quorum as it loses its voters: healthy (exit 0) asked by a list, by
// --config with --metrics, and with an address that answers nothing; one
// follower cut from the other voters by the packet filter, though the
// command still reaches it (exit 1, "voter N ... is far behind", then 0
// once healed); one voter stopped with SIGSTOP (exit 1, "voter N ... is
// down"); one voter formatted again with another cluster id (exit 1,
// "split cluster ids"); two voters killed (exit 2, "no majority
// reachable", and, from the survivor's metrics listener, how long no
// leader was heard from).
func TestStatusBadDay(t *testing.T) {
	t.Parallel()
	bin := kraftdBinary(t)
	metricsPorts, err := loopback.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	metricsURL := func(id int32) string { return fmt.Sprintf("http://127.0.0.1:%d", metricsPorts[id-1]) }
	cut := nemesis.NewNet(t) // before the processes, so that it is removed after them
	q := startStaticQuorum(t, bin, 3, cut, func(id int32) string {
		return "kraftd.metrics.listener=" + metricsURL(id) + "\n"
	})
	leader, _ := q.waitLeader(t, -1)
	all := strings.Join([]string{q.addr(1), q.addr(2), q.addr(3)}, ",")

	out := runStatusUntil(t, bin, 0, `"state": "healthy"`, "--bootstrap-controller", all, "--json")
	st := decodeStatus(t, out)
	if st.ClusterID != q.clusterID || st.LeaderID < 1 || st.VoterSource != "leader" || len(st.Voters) != 3 || len(st.Probes) != 3 ||
		st.Diagnosis.State != "healthy" || st.Diagnosis.ExitCode != 0 || len(st.Diagnosis.Problems) != 0 {
		t.Fatalf("healthy quorum:\n%s", out)
	}
	for i, p := range st.Probes {
		wantRole := "follower"
		if p.ID == st.LeaderID {
			wantRole = "leader"
		}
		if p.ID != int32(i+1) || p.Address != q.addr(p.ID) || !p.Voter || !p.Reachable || p.Role != wantRole || p.Epoch != st.LeaderEpoch ||
			p.LeaderID != st.LeaderID || p.LogEndOffset < 0 || p.Lag < 0 || p.ClusterID != q.clusterID || p.Supported == "unknown" {
			t.Errorf("controller %d: %+v\n%s", i+1, p, out)
		}
	}

	out = runStatusUntil(t, bin, 0, "3 of 3 voters up", "--config", q.confs[0], "--metrics", metricsURL(1)+","+metricsURL(2)+","+metricsURL(3))
	if !strings.Contains(out, "brokers:           0 registered") {
		t.Errorf("kraftd status --metrics:\n%s", out)
	}

	// One address that answers nothing, and one of the voters: the others
	// are found in the answers, and a stray address is no voter.
	ports, err := loopback.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	stray := fmt.Sprintf("127.0.0.1:%d", ports[0])
	out = runStatusUntil(t, bin, 0, `"state": "healthy"`, "--bootstrap-controller", stray+","+q.addr(leader), "--json")
	st = decodeStatus(t, out)
	if len(st.Probes) != 4 || st.Diagnosis.State != "healthy" {
		t.Fatalf("a stray address and the leader:\n%s", out)
	}
	if p := st.Probes[3]; p.Address != stray || p.ID != -1 || p.Reachable || p.Error == "" || p.Voter {
		t.Errorf("the stray address: %+v\n%s", p, out)
	}

	// A follower that cannot fetch from the leader: this test's own packets
	// are not cut, so the command still reaches it; the leader's last fetch
	// from it ages past --max-fetch-age. It is cut from both other voters,
	// so that it stays the one behind should the leadership move (as it
	// may on a loaded machine) between this status and the cut.
	st = decodeStatus(t, runStatusUntil(t, bin, 0, `"state": "healthy"`, "--bootstrap-controller", all, "--json"))
	f := 1 + st.LeaderID%3
	cut.Isolate(f)
	lagging := fmt.Sprintf("voter %d (%s) is far behind: ", f, q.addr(f))
	out = runStatusUntil(t, bin, 1, lagging, "--bootstrap-controller", all, "--max-fetch-age", "2s", "--json")
	st = decodeStatus(t, out)
	if st.LeaderID == f || st.Diagnosis.State != "degraded" || slices.ContainsFunc(st.Diagnosis.Problems,
		func(p statusProblem) bool { return p.Kind == "voter_lagging" && p.Node != f }) {
		t.Errorf("follower %d cut off:\n%s", f, out)
	}
	t.Logf("follower %d cut off:\n%s", f, out)
	cut.Heal()
	st = decodeStatus(t, runStatusUntil(t, bin, 0, `"state": "healthy"`, "--bootstrap-controller", all, "--max-fetch-age", "2s", "--json"))

	// One voter stopped (SIGSTOP), then back.
	leader = st.LeaderID
	a := 1 + leader%3
	if err := q.procs[a-1].Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	out = runStatusUntil(t, bin, 1, fmt.Sprintf("voter %d (%s) is down: no answer within 2s", a, q.addr(a)), "--bootstrap-controller", all)
	if !strings.Contains(out, "diagnosis: degraded: voter ") {
		t.Errorf("one voter stopped:\n%s", out)
	}
	t.Logf("one voter stopped:\n%s", out)
	if err := q.procs[a-1].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	st = decodeStatus(t, runStatusUntil(t, bin, 0, `"state": "healthy"`, "--bootstrap-controller", all, "--json"))

	// A voter formatted again with another cluster id.
	leader = st.LeaderID
	b := 1 + leader%3
	q.stop(t, b)
	meta := filepath.Join(filepath.Dir(q.confs[b-1]), "meta")
	if err := os.RemoveAll(meta); err != nil {
		t.Fatal(err)
	}
	const other = "0therC1usterIdAAAAAAAA"
	mustRun(t, bin, "format", "--config", q.confs[b-1], "--cluster-id", other, "--ignore-existing-cluster")
	q.start(t, b)
	want := fmt.Sprintf("split cluster ids: voter %d (%s) answers for cluster %s, the quorum is %s", b, q.addr(b), other, q.clusterID)
	out = runStatusUntil(t, bin, 1, want, "--bootstrap-controller", all)
	t.Logf("a voter of another cluster:\n%s", out)

	// Two voters killed, the leader among them: the follower left knows
	// when it last heard from a leader.
	last := 6 - leader - b
	for _, id := range []int32{leader, b} {
		_ = q.procs[id-1].Process.Kill() // by PID, the process this test started
		_ = q.procs[id-1].Wait()
		q.procs[id-1] = nil
	}
	out = runStatusUntil(t, bin, 2, "none heard from for ", "--config", q.confs[last-1], "--json", "--metrics", metricsURL(last))
	st = decodeStatus(t, out)
	if st.Diagnosis.State != "down" || !strings.Contains(st.Diagnosis.Summary, "no majority reachable: 1 of 3 voters answer") ||
		st.VoterSource != "config" || len(st.Probes) != 3 {
		t.Errorf("two voters killed:\n%s", out)
	}
	for _, p := range st.Probes {
		// The survivor names its own role through its metrics listener.
		if p.Reachable != (p.ID == last) || p.ID == last && (p.Role == "no-leader" || p.Role == "unknown" || p.Epoch < 1 || p.LeaderContactAgeMs < 0) {
			t.Errorf("two voters killed, controller %d: %+v\n%s", p.ID, p, out)
		}
	}
	out, _ = run(t, bin, "status", "--timeout", "2s", "--config", q.confs[last-1], "--metrics", metricsURL(last))
	t.Logf("two voters killed:\n%s", out)
}
