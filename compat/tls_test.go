package compat

import (
	"fmt"
	"strings"
	"testing"
)

// Three kraftd controllers over SSL with mutual TLS elect a leader and
// commit; after the leader is killed another is elected and commits on;
// Apache's kafka-metadata-quorum describes the quorum over SSL with a
// client certificate; a plaintext client is refused.
func TestKraftdQuorumOverMutualTLS(t *testing.T) {
	k := NewTestPKI(t)
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Kinds: []string{KindKraftd, KindKraftd, KindKraftd}, Props: k.ServerProps("required")})
	k.UseFor(t, MixedAddrs(members...)...)
	StartMixed(t, members...)

	first := WaitMixedLeader(t, members, VotersCaughtUp(1))
	leader := MemberByID(members, first.LeaderID)
	t.Logf("leader %s, epoch %d, high watermark %d", leader, first.LeaderEpoch, first.HighWatermark)
	leader.Kill()
	up := Without(members, leader)
	next := WaitMixedLeader(t, up, func(s *QuorumStatus) error {
		if s.LeaderEpoch <= first.LeaderEpoch || s.HighWatermark <= first.HighWatermark {
			return errorf("leader %d epoch %d high watermark %d: not past epoch %d, %d", s.LeaderID, s.LeaderEpoch, s.HighWatermark, first.LeaderEpoch, first.HighWatermark)
		}
		return nil
	})
	t.Logf("after SIGKILL: leader node %d, epoch %d, high watermark %d", next.LeaderID, next.LeaderEpoch, next.HighWatermark)
	leader.Start(t)
	WaitMixedLeader(t, members, VotersCaughtUp(next.HighWatermark))

	// The harness's own client reaches kraftd only with TLS.
	tlsAddrs.Delete(members[0].Addr())
	if _, err := APIVersions(members[0].Addr()); err == nil {
		t.Error("a plaintext ApiVersions was answered on the SSL listener")
	}
	k.UseFor(t, members[0].Addr())

	ReserveJVMs(t, 1)
	status, err := MetadataQuorum(t, Versions[0], "--bootstrap-controller", members[0].Addr(),
		"--command-config", k.WriteClientProperties(t), "describe", "--status")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kafka-metadata-quorum describe --status over SSL:\n%s", status)
	got := statusLines(status)
	if got["ClusterId"] != clusterID {
		t.Errorf("ClusterId %q, want %q", got["ClusterId"], clusterID)
	}
	for _, m := range members {
		if !strings.Contains(got["CurrentVoters"], fmt.Sprintf(`"id": %d`, m.ID)) {
			t.Errorf("CurrentVoters %q lacks %s", got["CurrentVoters"], m)
		}
	}
	for _, m := range members {
		if out := m.Proc().Output(); !strings.Contains(out, "principal") || !strings.Contains(out, "User:CN=controller,O=kraftd compat") {
			t.Errorf("%s never logged a peer's principal", m)
		}
	}
}

// One kraftd and two Apache 4.1.2 controllers over SSL with mutual TLS:
// leadership passes from one implementation to the other and back.
func TestMixedQuorumOverMutualTLS(t *testing.T) {
	version := "4.1.2"
	KafkaCache(t, version)
	ReserveJVMs(t, 2)
	k := NewTestPKI(t)
	members, _ := NewMixedStaticQuorum(t, MixedOptions{Version: version, Kinds: []string{KindKraftd, KindApache, KindApache},
		Props: k.ServerProps("required")})
	k.UseFor(t, MixedAddrs(members...)...)
	StartMixed(t, members...)

	cur := WaitMixedLeader(t, members, VotersCaughtUp(1))
	led := map[string]int{}
	leader := MemberByID(members, cur.LeaderID)
	led[leader.Kind]++
	t.Logf("first leader %s, epoch %d", leader, cur.LeaderEpoch)
	for round := 1; led[KindKraftd] == 0 || led[KindApache] == 0 || round <= 2; round++ {
		if round > maxFailovers {
			t.Fatalf("after %d rounds kraftd led %d times, Apache %d", maxFailovers, led[KindKraftd], led[KindApache])
		}
		want := KindKraftd
		if leader.Kind == KindKraftd {
			want = KindApache
		}
		cur = steerAndKill(t, members, leader, want, cur)
		next := MemberByID(members, cur.LeaderID)
		led[next.Kind]++
		t.Logf("round %d: killed %s; %s leads epoch %d", round, leader, next, cur.LeaderEpoch)
		leader.Start(t)
		cur = WaitMixedLeader(t, members, VotersCaughtUp(cur.HighWatermark))
		leader = MemberByID(members, cur.LeaderID)
	}
}
