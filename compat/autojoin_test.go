package compat

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kraftd/kraftd/metadata"
)

// autoJoinVersion is the Apache release the auto-join test runs against:
// controller.quorum.auto.join.enable came with 4.2.
const autoJoinVersion = "4.4.0"

// controller.quorum.auto.join.enable: controllers formatted
// --no-initial-controllers beside a dynamic quorum become voters by
// themselves. Two kraftd joiners beside an Apache 4.4.0 leader, one of
// them then reformatted (a new directory id), so that it must first remove
// its stale entry (the other two keep a majority meanwhile); and an Apache
// 4.4.0 joiner beside a kraftd leader.
func TestAutoJoin(t *testing.T) {
	t.Parallel()
	KafkaCache(t, autoJoinVersion)
	ReserveJVMs(t, 2) // one controller and the tools
	autoJoin := map[string]string{"controller.quorum.auto.join.enable": "true"}
	for _, kinds := range [][]string{{KindApache, KindKraftd, KindKraftd}, {KindKraftd, KindApache}} {
		t.Run(fmt.Sprintf("leader-%s-joiners-%s", kinds[0], kinds[1]), func(t *testing.T) {
			at := stamp(t)
			ports := FreePorts(t, len(kinds))
			clusterID := NewUUID()
			members := []*MixedMember{NewMixedDynamicMember(t, autoJoinVersion, kinds[0], 1, ports[0], Addr(ports[0]), clusterID, "--standalone")}
			for i, kind := range kinds[1:] {
				members = append(members, NewMixedDynamicMemberWith(t, autoJoinVersion, kind, int32(i+2), ports[i+1], Addr(ports[0]), clusterID, autoJoin, "--no-initial-controllers"))
			}
			StartMixed(t, members...)
			waitJoined(t, members, members[1:]...)
			at(fmt.Sprintf("%v joined by themselves", members[1:]))
			if len(members) < 3 {
				return
			}

			// Formatted anew, the last joiner is an observer whose id the
			// voter set names with its old directory: it removes that
			// entry, then adds itself again.
			joiner := members[len(members)-1]
			old := joiner.DirectoryID(t)
			joiner.Reformat(t, clusterID, "--no-initial-controllers")
			if joiner.DirectoryID(t) == old {
				t.Fatalf("reformatting kept directory id %s", old)
			}
			joiner.Start(t)
			waitJoined(t, members, joiner)
			at(fmt.Sprintf("%s, reformatted, replaced its stale voter entry", joiner))
		})
	}
}

// waitJoined waits until the leader names every member a voter, each
// joiner with its current directory id and that replica no observer, all
// caught up.
func waitJoined(t *testing.T, members []*MixedMember, joiners ...*MixedMember) {
	t.Helper()
	var want []int32
	for _, m := range members {
		want = append(want, m.ID)
	}
	dirs := map[int32]string{}
	for _, j := range joiners {
		dirs[j.ID] = j.DirectoryID(t)
	}
	WaitMixedLeader(t, members, func(s *QuorumStatus) error {
		if !slices.Equal(s.Voters, want) {
			return fmt.Errorf("voters %v, observers %v: want voters %v", s.Voters, s.Observers, want)
		}
		p := s.Resp.Topics[0].Partitions[0]
		for id, dir := range dirs {
			for _, r := range p.CurrentVoters {
				if got := metadata.Uuid(r.ReplicaDirectoryID).String(); r.ReplicaID == id && got != dir {
					return fmt.Errorf("voter %d has directory %s, want %s", id, got, dir)
				}
			}
			// A removed replica stays listed as an observer for a while
			// (Apache keeps it until it stops fetching); the joiner's own
			// directory must not be.
			for _, r := range p.Observers {
				if r.ReplicaID == id && metadata.Uuid(r.ReplicaDirectoryID).String() == dir {
					return fmt.Errorf("replica %d (directory %s) is still an observer", id, dir)
				}
			}
		}
		return VotersCaughtUp(s.HighWatermark)(s)
	})
}
