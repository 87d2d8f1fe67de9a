package health

import (
	"strings"
	"testing"
	"time"
)

// probeUp is a reachable controller of cluster "c" that follows leader 1
// in epoch 5, with the leader's view of its log.
func probeUp(id int32, lag, fetchAgoMs int64) *Probe {
	return &Probe{ID: id, Address: "h:" + string('0'+rune(id)), Voter: true, Reachable: true, Role: "follower", Epoch: 5, LeaderID: 1,
		LogEndOffset: 100 - lag, Lag: lag, LastFetchAgoMs: fetchAgoMs, LeaderContactAgeMs: -1, ClusterID: "c"}
}

func leaderReport(probes ...*Probe) *Report {
	r := &Report{ClusterID: "c", LeaderID: 1, LeaderEpoch: 5, VoterSource: "leader", Probes: probes}
	for _, p := range probes {
		r.Voters = append(r.Voters, Replica{ID: p.ID})
	}
	return r
}

// The diagnoses real processes cannot cheaply stage: a voter of another
// cluster, a lagging voter, a voter no answer gives an address for, and a
// quorum whose controllers still follow a leader that does not answer.
func TestDiagnose(t *testing.T) {
	lim := Limits{MaxLag: 50, MaxFetchAge: 5 * time.Second}
	foreign := probeUp(3, 0, 10)
	foreign.ClusterID = "other"
	noLeader := &Report{ClusterID: "c", LeaderID: -1, VoterSource: "config", Probes: []*Probe{
		probeUp(2, 0, -1), probeUp(3, 0, -1), {ID: 1, Address: "h:1", Voter: true, Error: "refused", LeaderContactAgeMs: -1}}}
	noLeader.Probes[0].Lag, noLeader.Probes[1].Lag = -1, -1
	noLeader.Probes[0].LeaderContactAgeMs, noLeader.Probes[1].LeaderContactAgeMs = 4200, 5000 // from the metrics listeners
	for _, tc := range []struct {
		name  string
		r     *Report
		state string
		code  int
		want  string
	}{
		{"healthy", leaderReport(probeUp(1, 0, 0), probeUp(2, 3, 40), probeUp(3, 0, 20)), Healthy, 0, "healthy: leader 1 in epoch 5, 3 of 3 voters up"},
		{"lagging by records", leaderReport(probeUp(1, 0, 0), probeUp(2, 51, 40), probeUp(3, 0, 20)), Degraded, 1, "voter 2 (h:2) is far behind: 51 records"},
		{"lagging by time", leaderReport(probeUp(1, 0, 0), probeUp(2, 0, 6000), probeUp(3, 0, 20)), Degraded, 1, "last fetch 6000 ms ago"},
		{"split cluster ids", leaderReport(probeUp(1, 0, 0), probeUp(2, 0, 40), foreign), Degraded, 1,
			"split cluster ids: voter 3 (h:3) answers for cluster other, the quorum is c"},
		{"voter without address", &Report{ClusterID: "c", LeaderID: 1, VoterSource: "leader", Voters: []Replica{{ID: 1}, {ID: 2}, {ID: 3}},
			Probes: []*Probe{probeUp(1, 0, 0), probeUp(2, 0, 0)}}, Degraded, 1, "voter 3 is down: no answer names its address"},
		{"no leader answers", noLeader, Down, 2, "no leader answers, none heard from for 4.2 s: 2 (h:2) follows 1 in epoch 5, 3 (h:3) follows 1 in epoch 5"},
	} {
		d := diagnose(tc.r, lim)
		if d.State != tc.state || d.ExitCode != tc.code || !strings.Contains(d.Summary, tc.want) {
			t.Errorf("%s: %s (exit %d) %q; want %s (exit %d) with %q", tc.name, d.State, d.ExitCode, d.Summary, tc.state, tc.code, tc.want)
		}
	}
}
