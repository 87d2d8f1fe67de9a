package compat

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A dynamic quorum (kraft.version 1): one node formatted --standalone
// leads a quorum of itself, the other formatted --no-initial-controllers
// finds it through controller.quorum.bootstrap.servers, joins as an
// observer and is made a voter with kafka-metadata-quorum add-controller,
// then removed again with remove-controller. Apache leader adding kraftd,
// kraftd leader adding Apache, and kraftd leader adding kraftd.
func TestMixedDynamicAddRemoveController(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 2)
		for _, kinds := range [][2]string{{KindApache, KindKraftd}, {KindKraftd, KindApache}, {KindKraftd, KindKraftd}} {
			t.Run("leader-"+kinds[0]+"-joiner-"+kinds[1], func(t *testing.T) {
				runMixedAddRemove(t, v, kinds[0], kinds[1], NewMixedDynamicMember)
			})
		}
	})
}

// dynamicMemberMaker is NewMixedDynamicMember or NewLineDynamicMember.
type dynamicMemberMaker func(t testing.TB, version, kind string, id int32, port int, bootstrap, clusterID string, formatArgs ...string) *MixedMember

// runMixedAddRemove formats node 1 (leaderKind) --standalone and node 2
// (joinerKind) --no-initial-controllers with newMember, waits until 2
// observes, adds it with add-controller and removes it again with
// remove-controller, each through the leader with Apache's tool of v.
func runMixedAddRemove(t *testing.T, v, leaderKind, joinerKind string, newMember dynamicMemberMaker) {
	ports := FreePorts(t, 2)
	clusterID := NewUUID()
	leader := newMember(t, v, leaderKind, 1, ports[0], Addr(ports[0]), clusterID, "--standalone")
	joiner := newMember(t, v, joinerKind, 2, ports[1], Addr(ports[0]), clusterID, "--no-initial-controllers")
	members := []*MixedMember{leader, joiner}
	StartMixed(t, members...)
	WaitMixedLeader(t, members, func(s *QuorumStatus) error {
		if s.LeaderID != 1 || !slices.Contains(s.Observers, 2) {
			return fmt.Errorf("leader %d, voters %v, observers %v: want leader 1 and observer 2", s.LeaderID, s.Voters, s.Observers)
		}
		return nil
	})
	replication, err := MetadataQuorum(t, v, "--bootstrap-controller", leader.Addr(), "describe", "--replication")
	if err != nil {
		t.Fatal(err)
	}
	if !listsObserver(replication, "2") {
		t.Errorf("describe --replication lists no observer 2:\n%s", replication)
	}

	out, err := MetadataQuorum(t, v, "--bootstrap-controller", leader.Addr(), "--command-config", joiner.Config(), "add-controller")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Added controller 2") {
		t.Errorf("add-controller printed %q", out)
	}
	WaitMixedLeader(t, members, func(s *QuorumStatus) error {
		if !slices.Equal(s.Voters, []int32{1, 2}) {
			return fmt.Errorf("voters %v, want [1 2]", s.Voters)
		}
		return VotersCaughtUp(s.HighWatermark)(s)
	})

	RemoveController(t, v, leader.Addr(), []*MixedMember{leader}, 2, joiner.DirectoryID(t))
	WaitMixedLeader(t, members, func(s *QuorumStatus) error {
		if !slices.Equal(s.Voters, []int32{1}) {
			return fmt.Errorf("voters %v, want [1]", s.Voters)
		}
		return nil
	})
}

// listsObserver reports whether kafka-metadata-quorum describe
// --replication printed a row for node id with status Observer.
func listsObserver(out, id string) bool {
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) > 1 && fields[0] == id && fields[len(fields)-1] == "Observer" {
			return true
		}
	}
	return false
}
