package metrics

import (
	"strings"
	"testing"

	"github.com/kraftd/kraftd/peer"
	"github.com/kraftd/kraftd/quorum"
)

func TestJudgeReadiness(t *testing.T) {
	bounds := ReadyBounds{MaxContactAgeMs: 1000, MaxLagRecords: 100}
	three := quorum.VoterSet{{ID: 1}, {ID: 2}, {ID: 3}}
	leader := quorum.Status{SoftState: quorum.SoftState{Role: quorum.RoleLeader, LeaderID: 1, Epoch: 4, VotedID: 1, IsVoter: true, EpochCommitted: true},
		Voters: three, HighWatermark: 50, EndOffset: 50, LeaderContactMs: 9_500}
	follower := quorum.Status{SoftState: quorum.SoftState{Role: quorum.RoleFollower, LeaderID: 1, Epoch: 4, VotedID: -1, IsVoter: true},
		Voters: three, HighWatermark: 50, EndOffset: 50, LeaderContactMs: 9_800}
	with := func(s quorum.Status, f func(*quorum.Status)) quorum.Status { f(&s); return s }
	for _, tc := range []struct {
		name    string
		st      quorum.Status
		applied int64
		ready   bool
		says    string
	}{
		{"leader with a fresh majority", leader, 49, true, "a majority of the 3 voters fetched 500 ms ago"},
		{"leader whose majority went quiet", with(leader, func(s *quorum.Status) { s.LeaderContactMs = 8_000 }), 49, false, "no majority of the 3 voters fetched in the last 1000 ms"},
		{"leader before its epoch committed", with(leader, func(s *quorum.Status) { s.EpochCommitted = false }), 49, false, "nothing of the epoch has committed"},
		{"follower in touch", follower, 45, true, "follower of leader 1 in epoch 4"},
		{"observer in touch", with(follower, func(s *quorum.Status) { s.IsVoter = false }), 49, true, "observer of leader 1"},
		{"follower out of touch", with(follower, func(s *quorum.Status) { s.LeaderContactMs = 8_900 }), 49, false, "last heard from 1100 ms ago"},
		{"follower never in touch", with(follower, func(s *quorum.Status) { s.LeaderContactMs = -1 }), 49, false, "has not been heard from"},
		{"follower without a high watermark", with(follower, func(s *quorum.Status) { s.HighWatermark = -1 }), -1, false, "high watermark is not known"},
		{"follower whose image lags", with(follower, func(s *quorum.Status) { s.HighWatermark = 500 }), 49, false, "450 records behind the high watermark 500"},
		{"candidate", with(follower, func(s *quorum.Status) { s.Role, s.LeaderID, s.Epoch = quorum.RoleCandidate, -1, 5 }), 49, false, "no leader known in epoch 5 (candidate)"},
		{"prospective that knew a leader", with(follower, func(s *quorum.Status) { s.Role = quorum.RoleProspective }), 49, false, "no leader known in epoch 4"},
		{"resigned leader", with(leader, func(s *quorum.Status) { s.Role = quorum.RoleResigned }), 49, false, "no leader known"},
	} {
		r := judgeReadiness(1, tc.st, tc.applied, 10_000, bounds)
		if r.Ready != tc.ready || !strings.Contains(r.Reason, tc.says) {
			t.Errorf("%s: ready %v %q, want %v saying %q", tc.name, r.Ready, r.Reason, tc.ready, tc.says)
		}
	}
}

func TestApacheStateNames(t *testing.T) {
	for _, tc := range []struct {
		s    quorum.SoftState
		want string
	}{
		{quorum.SoftState{Role: quorum.RoleLeader}, "leader"},
		{quorum.SoftState{Role: quorum.RoleFollower, IsVoter: true}, "follower"},
		{quorum.SoftState{Role: quorum.RoleFollower}, "observer"},
		{quorum.SoftState{Role: quorum.RoleCandidate, VotedID: 1}, "candidate"},
		{quorum.SoftState{Role: quorum.RoleProspective, VotedID: -1}, "prospective"},
		{quorum.SoftState{Role: quorum.RoleProspective, VotedID: 2}, "prospective-voted"},
		{quorum.SoftState{Role: quorum.RoleUnattached, VotedID: -1}, "unattached"},
		{quorum.SoftState{Role: quorum.RoleUnattached, VotedID: 2}, "unattached-voted"},
		{quorum.SoftState{Role: quorum.RoleResigned, VotedID: 1}, "unattached"},
	} {
		if got := apacheState(tc.s); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
}

// What a node knows of its peers names why it is not ready, and never
// makes a node with a working quorum unready.
func TestReadinessNamesPeerProblems(t *testing.T) {
	bounds := ReadyBounds{MaxContactAgeMs: 1000, MaxLagRecords: 100}
	three := quorum.VoterSet{{ID: 1}, {ID: 2}, {ID: 3}}
	leader := quorum.Status{SoftState: quorum.SoftState{Role: quorum.RoleLeader, LeaderID: 1, Epoch: 4, IsVoter: true, EpochCommitted: true},
		Voters: three, HighWatermark: 50, EndOffset: 50, LeaderContactMs: 9_500}
	cutOff := quorum.Status{SoftState: quorum.SoftState{Role: quorum.RoleFollower, LeaderID: 2, Epoch: 4, IsVoter: true},
		Voters: three, HighWatermark: 50, EndOffset: 50, LeaderContactMs: 5_000}
	unattached := quorum.Status{SoftState: quorum.SoftState{Role: quorum.RoleUnattached, LeaderID: -1, Epoch: 4, IsVoter: true}, Voters: three}
	refused := []peer.ClusterMismatch{{Peer: 3, Addr: "c3:9093", Refused: true}}
	asked := []peer.ClusterMismatch{{Peer: 3, Addr: "10.0.0.3:40000", ClusterID: "other"}}
	gone := map[int32]string{2: "lookup c2: no such host", 3: "lookup c3: no such host"}
	for _, tc := range []struct {
		name       string
		st         quorum.Status
		mismatches []peer.ClusterMismatch
		unresolved map[int32]string
		ready      bool
		says       string
	}{
		{"a leader asked by a node of another cluster", leader, asked, nil, true, "a majority"},
		{"a leader refused by a stray voter", leader, refused, nil, true, "a majority"},
		{"a leader with a voter gone from DNS", leader, nil, gone, true, "a majority"},
		{"a node refused as of another cluster", unattached, refused, gone, false, "the controller at c3:9093 answers INCONSISTENT_CLUSTER_ID"},
		{"a follower whose leader does not resolve", cutOff, nil, gone, false, "the host name of leader 2 does not resolve (lookup c2: no such host)"},
		{"a node with no leader and peers that do not resolve", unattached, nil, gone, false, "the host name of controller 2 does not resolve"},
	} {
		r := withPeerProblems(judgeReadiness(1, tc.st, 49, 10_000, bounds), tc.st, tc.mismatches, tc.unresolved)
		if r.Ready != tc.ready || !strings.Contains(r.Reason, tc.says) || r.PeersOfAnotherCluster != len(tc.mismatches) {
			t.Errorf("%s: ready %v %q (%d of another cluster), want %v saying %q", tc.name, r.Ready, r.Reason, r.PeersOfAnotherCluster, tc.ready, tc.says)
		}
	}
}
