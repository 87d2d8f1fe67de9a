package compat

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/metadata"
)

// kafka-features upgrade --feature kraft.version=1 turns a static mixed
// quorum (controller.quorum.voters, kraft.version 0) dynamic, under a
// kraftd leader and under an Apache leader: the leader upgrades once every
// voter has told it its directory id and kraft.version range
// (UpdateRaftVoter), the voter set is then written with every directory
// id, and remove-controller / add-controller work on it. make test runs
// one cluster per Apache version (kraftVersionLeaders).
func TestMixedKRaftVersionUpgrade(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		// Each case has at most two Apache controllers; they run one
		// after the other.
		ReserveJVMs(t, 3)
		for _, leaderKind := range kraftVersionLeaders(v) {
			t.Run("leader-"+leaderKind, func(t *testing.T) {
				runKRaftVersionUpgrade(t, v, leaderKind)
			})
		}
	})
}

// kraftVersionLeaders are the leader kinds the upgrade runs under for
// Apache version v: in make test one cluster per version, Apache leading
// with 4.1.2 (the release the issue saw refuse kraftd's followers) and
// kraftd with the newest; both for every version in make matrix.
func kraftVersionLeaders(v string) []string {
	if matrixBuild {
		return []string{KindKraftd, KindApache}
	}
	if v == Versions[0] {
		return []string{KindApache}
	}
	return []string{KindKraftd}
}

// runKRaftVersionUpgrade builds a static quorum of two controllers of
// leaderKind and one of the other kind, started so that leaderKind leads
// (the third starts once the first two have elected a leader), upgrades
// kraft.version, and removes and adds back the third.
func runKRaftVersionUpgrade(t *testing.T, v, leaderKind string) {
	at := stamp(t)
	other := KindApache
	if leaderKind == KindApache {
		other = KindKraftd
	}
	members, _ := NewMixedStaticQuorum(t, MixedOptions{Version: v, Kinds: []string{leaderKind, leaderKind, other}})
	first, third := members[:2], members[2]
	listeners := attachMetricsListeners(t, members)
	StartMixed(t, first...)
	WaitMixedLeader(t, first, nil)
	StartMixed(t, third)
	cur := WaitMixedLeader(t, members, VotersCaughtUp(0))
	leader := MemberByID(members, cur.LeaderID)
	if leader.Kind != leaderKind {
		t.Fatalf("%s leads, want a %s leader", leader, leaderKind)
	}
	at(fmt.Sprintf("static quorum led by %s, epoch %d", leader, cur.LeaderEpoch))
	waitStaticVotersIgnored(t, listeners, 0, 0)

	features := func(args ...string) (string, error) {
		return Features(t, v, append([]string{"--bootstrap-controller", leader.Addr()}, args...)...)
	}
	// Until every follower has sent UpdateRaftVoter (one fetch timeout
	// after it found the leader) the leader refuses; then a dry run
	// passes and writes nothing.
	Eventually(t, ReadyTimeout, "kafka-features upgrade --dry-run kraft.version=1", nil, func() error {
		out, err := features("upgrade", "--feature", "kraft.version=1", "--dry-run")
		if err != nil {
			return fmt.Errorf("%q: %w", out, err)
		}
		return nil
	})
	if out, err := features("describe"); err != nil || !kraftVersionFinalized(0).MatchString(out) {
		t.Fatalf("after a dry run kafka-features describe (%v) does not show kraft.version finalized at 0:\n%s", err, out)
	}
	out, err := features("upgrade", "--feature", "kraft.version=1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kraft.version was upgraded to 1") {
		t.Errorf("kafka-features upgrade printed %q", out)
	}
	at("kraft.version upgraded")
	cur = WaitMixedLeader(t, members, func(s *QuorumStatus) error {
		if n := dynamicVoters(s); n != 3 {
			return fmt.Errorf("%d of the voters have a directory id", n)
		}
		return VotersCaughtUp(s.HighWatermark)(s)
	})
	checkUpgradedQuorum(t, v, members, cur)
	waitStaticVotersIgnored(t, listeners, 1, 1)
	// kraft.version never goes back (what the tool prints of it differs
	// between Apache releases).
	out, err = features("downgrade", "--feature", "kraft.version=0")
	t.Logf("kafka-features downgrade --feature kraft.version=0 (failed: %t): %s", err != nil, out)
	for _, m := range members {
		if out, err := Features(t, v, "--bootstrap-controller", m.Addr(), "describe"); err != nil || !kraftVersionFinalized(1).MatchString(out) {
			t.Errorf("after a downgrade attempt %s (%v) does not show kraft.version finalized at 1:\n%s", m, err, out)
		}
	}

	RemoveController(t, v, leader.Addr(), members, third.ID, third.DirectoryID(t))
	WaitMixedLeader(t, members, func(s *QuorumStatus) error {
		if !slices.Equal(s.Voters, []int32{1, 2}) || !slices.Contains(s.Observers, third.ID) {
			return fmt.Errorf("voters %v, observers %v: want voters [1 2] and observer %d", s.Voters, s.Observers, third.ID)
		}
		return nil
	})
	at(fmt.Sprintf("removed %s", third))
	out, err = MetadataQuorum(t, v, "--bootstrap-controller", leader.Addr(), "--command-config", third.Config(), "add-controller")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, fmt.Sprintf("Added controller %d", third.ID)) {
		t.Errorf("add-controller printed %q", out)
	}
	WaitMixedLeader(t, members, func(s *QuorumStatus) error {
		if !slices.Equal(s.Voters, []int32{1, 2, 3}) {
			return fmt.Errorf("voters %v, want [1 2 3]", s.Voters)
		}
		return VotersCaughtUp(s.HighWatermark)(s)
	})
	at(fmt.Sprintf("added %s back", third))
}

// dynamicVoters counts the voters DescribeQuorum names with a directory
// id: none in a static quorum, every one once it is dynamic.
func dynamicVoters(s *QuorumStatus) int {
	n := 0
	for _, r := range s.Resp.Topics[0].Partitions[0].CurrentVoters {
		if r.ReplicaDirectoryID != (metadata.Uuid{}) {
			n++
		}
	}
	return n
}

// kraftVersionFinalized matches kafka-features describe's line for
// kraft.version finalized at level.
func kraftVersionFinalized(level int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`Feature: kraft.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: %d\b`, level))
}

// checkUpgradedQuorum checks what Apache's tools say of the upgraded
// quorum: kraft.version 1 finalized, asked of each kind of controller, and
// every voter listed with its own directory id by describe --status and
// describe --replication.
func checkUpgradedQuorum(t *testing.T, v string, members []*MixedMember, cur *QuorumStatus) {
	t.Helper()
	level := kraftVersionFinalized(1)
	for _, kind := range []string{KindKraftd, KindApache} {
		m := firstOfKind(members, kind)
		out, err := Features(t, v, "--bootstrap-controller", m.Addr(), "describe")
		if err != nil {
			t.Fatal(err)
		}
		if !level.MatchString(out) {
			t.Errorf("kafka-features describe through %s does not show kraft.version finalized at 1:\n%s", m, out)
		}
	}
	status, err := MetadataQuorum(t, v, "--bootstrap-controller", MemberByID(members, cur.LeaderID).Addr(), "describe", "--status")
	if err != nil {
		t.Fatal(err)
	}
	replication, err := MetadataQuorum(t, v, "--bootstrap-controller", MemberByID(members, cur.LeaderID).Addr(), "describe", "--replication")
	if err != nil {
		t.Fatal(err)
	}
	voters := statusLines(status)["CurrentVoters"]
	for _, m := range members {
		dir := m.DirectoryID(t)
		if !strings.Contains(voters, fmt.Sprintf(`"id": %d, "directoryId": "%s"`, m.ID, dir)) {
			t.Errorf("describe --status CurrentVoters does not name %s with directory %s: %s", m, dir, voters)
		}
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+%s\s+.*\b(Leader|Follower)\s*$`, m.ID, dir)).MatchString(replication) {
			t.Errorf("describe --replication has no voter row for %s with directory %s:\n%s", m, dir, replication)
		}
	}
}
