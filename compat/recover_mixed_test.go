package compat

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRecoverLostMajorityMixed is TestRecoverLostMajority on a static
// quorum of two kraftd controllers and an Apache 4.4.0 one, with an
// Apache 4.4.0 broker:
//   - `kraftd recover` refuses the running Apache controller's directory
//     (Apache's fcntl lock);
//   - the Apache controller and a kraftd are lost with their directories;
//     the kraftd survivor, recovered, leads alone; the broker keeps every
//     acknowledged record and takes a new topic;
//   - both lost controllers come back with their old directories: no
//     second leader, and the Apache one follows as an observer, which
//     add-controller then makes a voter of the recovered quorum;
//   - every controller is lost again, and `kraftd recover` on the Apache
//     controller's directory and server.properties makes it a kraftd
//     node the broker follows.
func TestRecoverLostMajorityMixed(t *testing.T) {
	t.Parallel()
	ReserveJVMs(t, 3) // the Apache controller, the broker, a tool
	at := stamp(t)
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Version: recoverBroker, Kinds: []string{KindKraftd, KindKraftd, KindApache}})
	StartMixed(t, members...)
	WaitMixedLeader(t, members, nil)
	brokers := StartBrokers(t, recoverBroker, MixedVoters(members), clusterID, []int{101}, nil)
	broker := brokers.Brokers[0]
	CreateTopic(t, broker.Addr(), "acked", 3, 1, nil)
	acked := produceAcked(t, broker.Addr(), "acked", 200)
	at("two kraftd and an Apache controller, an Apache broker and 200 acknowledged records")

	apache := members[2]
	out, code := runRecover(t, apache.ConfigFile(), "--yes-i-lost-the-majority")
	if code != 2 || !strings.Contains(out, "in use") {
		t.Fatalf("recover beside the running Apache controller: exit %d, want 2 naming the lock:\n%s", code, out)
	}
	// start refuses it too: Apache's lock is an fcntl lock, which kraftd's
	// own flock does not see, so storage tries it first.
	if out, code := runKraftd(t, "start", "--config", apache.ConfigFile()); code != 2 || !strings.Contains(out, "fcntl lock") {
		t.Fatalf("start on the running Apache controller's directory: exit %d, want 2 naming its fcntl lock:\n%s", code, out)
	}
	// The Apache controller goes first, so that a kraftd leads when the
	// second loss comes: the survivor must be a kraftd that holds
	// everything the broker saw committed.
	apache.Kill()
	cur := WaitMixedLeader(t, members[:2], nil)
	survivor := MemberByID(members, cur.LeaderID)
	lost := []*MixedMember{Without(members[:2], survivor)[0], apache}
	lost[0].Kill()
	for _, m := range lost {
		if err := os.Rename(m.Dir, m.Dir+".old"); err != nil {
			t.Fatal(err)
		}
	}
	survivor.Kill()
	if out, code := runRecover(t, survivor.ConfigFile(), "--yes-i-lost-the-majority"); code != 0 {
		t.Fatalf("recover: exit %d:\n%s", code, out)
	}
	survivor.Start(t)
	rec := WaitMixedLeader(t, []*MixedMember{survivor}, soleVoterAbove(survivor.ID, cur.LeaderEpoch))
	CreateTopic(t, broker.Addr(), "after-recovery", 1, 1, nil)
	checkConsumed(t, broker.Addr(), "acked", acked)
	at(fmt.Sprintf("recovered: kraftd node %d leads epoch %d alone, the broker follows", rec.LeaderID, rec.LeaderEpoch))

	for _, m := range lost {
		if err := os.Rename(m.Dir+".old", m.Dir); err != nil {
			t.Fatal(err)
		}
		m.Start(t)
	}
	onlyLeader(t, MixedAddrs(members...), rec)
	WaitMixedLeader(t, []*MixedMember{survivor}, ObservesAs(apache.ID, apache.DirectoryID(t)))
	AddController(t, recoverBroker, survivor.Addr(), apache)
	WaitMixedLeader(t, []*MixedMember{survivor}, func(s *QuorumStatus) error {
		if !slices.Equal(s.Voters, []int32{survivor.ID, apache.ID}) || s.LeaderEpoch != rec.LeaderEpoch {
			return fmt.Errorf("leader %d epoch %d voters %v", s.LeaderID, s.LeaderEpoch, s.Voters)
		}
		return VotersCaughtUp(s.HighWatermark)(s)
	})
	CreateTopic(t, broker.Addr(), "after-fence", 1, 1, nil)
	at("old voters back: no second leader; the Apache one added back as a voter")

	// The Apache controller's directory, recovered by kraftd and run by
	// kraftd from the same server.properties.
	for _, m := range members {
		m.Kill()
	}
	out, code = runRecover(t, apache.ConfigFile(), "--yes-i-lost-the-majority")
	if code != 0 {
		t.Fatalf("recover the Apache directory: exit %d:\n%s", code, out)
	}
	t.Logf("kraftd recover on the Apache controller's directory:\n%s", out)
	StartKraftd(t, "kraftd-on-apache-dir", "--log-format", "json", "start", "--config", apache.ConfigFile())
	last := WaitLeader(t, []string{apache.Addr()}, soleVoterAbove(apache.ID, rec.LeaderEpoch))
	CreateTopic(t, broker.Addr(), "after-apache-dir", 1, 1, nil)
	checkConsumed(t, broker.Addr(), "acked", acked)
	at(fmt.Sprintf("kraftd on the recovered Apache directory leads epoch %d, the broker follows", last.LeaderEpoch))
}

// soleVoterAbove accepts a leader id alone in the voter set, in an epoch
// over a million above was.
func soleVoterAbove(id, was int32) func(*QuorumStatus) error {
	return func(s *QuorumStatus) error {
		if s.LeaderID != id || s.LeaderEpoch <= was+1_000_000 || !slices.Equal(s.Voters, []int32{id}) {
			return fmt.Errorf("leader %d epoch %d voters %v", s.LeaderID, s.LeaderEpoch, s.Voters)
		}
		return nil
	}
}
