package compat

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/kraftd/kraftd/controller"
)

// defaultLevelLines are the Apache lines whose storage tool formats a
// metadata.version above 4.1-IV1 by default, with the level it picks
// (Apache's MetadataVersion.LATEST_PRODUCTION of that release).
var defaultLevelLines = map[string]int16{"4.2.2": 29, "4.3.1": 30, "4.4.0": 33}

// A cluster formatted by Apache 4.2, 4.3 and 4.4 at its own default
// metadata.version (4.2-IV1, 4.3-IV0, 4.4-IV2, with share.version and
// streams.version at their defaults) takes a kraftd controller: two Apache
// controllers and one kraftd in a static quorum agree on the finalized
// levels, an Apache broker of the same release registers and serves
// produce and consume, and the lead passes from Apache to kraftd and back
// (SIGKILL of the leader) while nothing acknowledged is lost.
func TestApacheDefaultLevelTakesKraftd(t *testing.T) {
	for _, v := range []string{"4.2.2", "4.3.1", "4.4.0"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			KafkaCache(t, v)
			ReserveJVMs(t, 3) // two Apache controllers, one broker
			runDefaultLevelQuorum(t, v, defaultLevelLines[v])
		})
	}
}

func runDefaultLevelQuorum(t *testing.T, v string, wantMV int16) {
	at := stamp(t)
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Version: v, Kinds: []string{KindApache, KindApache, KindKraftd},
		ReleaseVersion: ApacheDefaultRelease})
	StartMixed(t, members...)
	cur := WaitMixedLeader(t, members, func(s *QuorumStatus) error {
		if s.HighWatermark <= 0 {
			return fmt.Errorf("leader %d: high watermark %d", s.LeaderID, s.HighWatermark)
		}
		return nil
	})
	at(fmt.Sprintf("first leader %s", MemberByID(members, cur.LeaderID)))
	checkSameFinalized(t, members, wantMV)

	brokers := StartBrokers(t, v, MixedVoters(members), clusterID, []int{101}, nil)
	CreateTopic(t, brokers.Addrs()[0], trafficTopic, 2, 1, nil)
	brokers.WaitPartitions(t, "traffic topic ready", trafficTopic, fullIsr(brokers.IDs()))
	traffic := StartTraffic(t, brokers.Addrs(), trafficTopic, 2)
	traffic.WaitProgress("start", traffic.Mark(), 100)
	at("broker serving produce and consume")

	handovers := map[string]int{}
	for round := 1; handovers[KindApache+"->"+KindKraftd] == 0 || handovers[KindKraftd+"->"+KindApache] == 0; round++ {
		if round > maxFailovers {
			t.Fatalf("after %d leader kills the handovers were %v; want both directions", maxFailovers, handovers)
		}
		leader := MemberByID(members, cur.LeaderID)
		want := KindKraftd
		if leader.Kind == KindKraftd {
			want = KindApache
		}
		mark := traffic.Mark()
		cur = steerAndKill(t, members, leader, want, cur)
		next := MemberByID(members, cur.LeaderID)
		handovers[leader.Kind+"->"+next.Kind]++
		traffic.WaitProgress(fmt.Sprintf("round %d, %s leading", round, next), mark, 100)
		topic := fmt.Sprintf("round-%d", round)
		CreateTopic(t, brokers.Addrs()[0], topic, 1, 1, nil)
		brokers.WaitPartitions(t, topic+" ready", topic, fullIsr(brokers.IDs()))
		leader.Start(t)
		cur = WaitMixedLeader(t, members, VotersCaughtUp(cur.HighWatermark))
		at(fmt.Sprintf("round %d: killed %s, %s led and wrote %s; %s caught up again", round, leader, next, topic, leader))
	}
	n := traffic.StopAndVerify()
	brokers.WaitUnfenced(t, brokers.IDs()...)
	checkSameFinalized(t, members, wantMV)
	at(fmt.Sprintf("handovers %v; %d acknowledged records all read back", handovers, n))
	for _, m := range members {
		out := m.Proc().Output()
		if m.Kind == KindKraftd {
			if r := regexp.MustCompile(`(?m)^.*skipping a record the image rejects.*$`).FindString(out); r != "" {
				t.Errorf("%s rejected a record: %s", m, r)
			}
		} else if f := apacheFault.FindString(out); f != "" {
			t.Errorf("%s logged a metadata fault: %s", m, f)
		}
	}
}

// checkSameFinalized waits until every member answers ApiVersions with the
// same finalized features, metadata.version at wantMV, and logs them.
func checkSameFinalized(t *testing.T, members []*MixedMember, wantMV int16) {
	t.Helper()
	var seen string
	Eventually(t, ReadyTimeout, "the same finalized features on every member", nil, func() error {
		first := ""
		for _, m := range members {
			resp, err := APIVersions(m.Addr())
			if err != nil {
				return err
			}
			levels := map[string]int16{}
			for _, f := range resp.FinalizedFeatures {
				levels[f.Name] = f.MaxVersionLevel
			}
			if levels[controller.MetadataVersionFeature] != wantMV {
				return fmt.Errorf("%s: finalized %v, want metadata.version %d", m, levels, wantMV)
			}
			got := fmt.Sprint(levels)
			if first == "" {
				first = got
			} else if got != first {
				return fmt.Errorf("%s finalized %s, another member %s", m, got, first)
			}
		}
		seen = first
		return nil
	})
	t.Logf("finalized on every member: %s", seen)
}
