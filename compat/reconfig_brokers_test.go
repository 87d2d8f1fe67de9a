package compat

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Apache's quorum-reconfiguration system test
// (tests/kafkatest/tests/core/quorum_reconfiguration_test.py), with two
// Apache brokers serving a producer and a consumer throughout, once with
// kraftd as the first node and once with Apache: node 1 is formatted
// --standalone and leads alone; nodes 2 and 3, of the other
// implementation and formatted --no-initial-controllers, each start, show
// as observers and are added with add-controller; then remove-controller
// takes out the leader, node 1, and describe --status shows a new leader
// among 2 and 3 and node 1 as an observer beside the brokers. A topic
// created afterwards shows the new leader serving the brokers, and nothing
// acknowledged is lost.
func TestQuorumReconfigurationWithBrokers(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 5) // two brokers, up to two Apache controllers, a tool
		for _, first := range []string{KindKraftd, KindApache} {
			t.Run("first-"+first, func(t *testing.T) { reconfigureWithBrokers(t, v, first) })
		}
	})
}

func reconfigureWithBrokers(t *testing.T, v, first string) {
	at := stamp(t)
	joinerKind := KindApache
	if first == KindApache {
		joinerKind = KindKraftd
	}
	ports := FreePorts(t, 3)
	clusterID := NewUUID()
	// Every node and broker is given all three controllers, as Apache's
	// system test does: an observer that lost its leader (node 1 once
	// removed) finds the new one only through the bootstrap servers.
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, Addr(p))
	}
	bootstrap := strings.Join(addrs, ",")
	leader := NewMixedDynamicMember(t, v, first, 1, ports[0], bootstrap, clusterID, "--standalone")
	live := []*MixedMember{leader}
	t.Cleanup(func() { StopMixed(live...) })
	leader.Start(t)
	WaitMixedLeader(t, live, wantQuorum(1, []int32{1}, nil))

	brokers := StartBrokers(t, v, "", clusterID, []int{101, 102}, DynamicBrokerProps(bootstrap))
	CreateTopic(t, brokers.Addrs()[0], trafficTopic, 2, 2, nil)
	brokers.WaitPartitions(t, "traffic topic ready", trafficTopic, fullIsr(brokers.IDs()))
	traffic := StartTraffic(t, brokers.Addrs(), trafficTopic, 2)
	traffic.WaitProgress("start", traffic.Mark(), 100)
	at(fmt.Sprintf("%s node 1 leads alone; brokers serve traffic", first))

	for _, id := range []int32{2, 3} {
		joiner := NewMixedDynamicMember(t, v, joinerKind, id, ports[id-1], bootstrap, clusterID, "--no-initial-controllers")
		joiner.Start(t)
		live = append(live, joiner)
		voters := MemberIDs(live...)
		WaitMixedLeader(t, live, wantQuorum(1, voters[:len(voters)-1], []int32{id, 101, 102}))
		AddController(t, v, bootstrap, joiner)
		WaitMixedLeader(t, live, func(s *QuorumStatus) error {
			if err := wantQuorum(1, voters, []int32{101, 102})(s); err != nil {
				return err
			}
			return VotersCaughtUp(s.HighWatermark)(s)
		})
		at(fmt.Sprintf("%s joined as observer and was added", joiner))
	}

	mark := traffic.Mark()
	rest := live[1:]
	RemoveController(t, v, strings.Join(MixedAddrs(rest...), ","), 1, leader.DirectoryID(t))
	after := WaitMixedLeader(t, rest, wantQuorum(-1, []int32{2, 3}, []int32{1, 101, 102}))
	at(fmt.Sprintf("removed leader 1; %s leads", MemberByID(live, after.LeaderID)))

	st := DescribeStatus(t, v, strings.Join(MixedAddrs(rest...), ","))
	if st.LeaderID != 2 && st.LeaderID != 3 || !slices.Equal(st.Voters, []int32{2, 3}) || !slices.Equal(st.Observers, []int32{1, 101, 102}) {
		t.Errorf("describe --status: leader %d, voters %v, observers %v; want leader 2 or 3, voters [2 3], observers [1 101 102]\n%s",
			st.LeaderID, st.Voters, st.Observers, st.Text)
	}
	CreateTopic(t, brokers.Addrs()[1], "after-reconfiguration", 2, 2, nil)
	brokers.WaitPartitions(t, "topic created by the new leader", "after-reconfiguration", fullIsr(brokers.IDs()))
	traffic.WaitProgress("after removing the leader", mark, 100)
	n := traffic.StopAndVerify()
	brokers.WaitUnfenced(t, brokers.IDs()...)
	at(fmt.Sprintf("%d acknowledged records all read back", n))
}

// wantQuorum is a WaitLeader acceptor: the leader is leader (any, if -1),
// the voters are exactly voters and the observers exactly observers
// (unchecked if nil).
func wantQuorum(leader int32, voters, observers []int32) func(*QuorumStatus) error {
	return func(s *QuorumStatus) error {
		obs := slices.Sorted(slices.Values(s.Observers))
		switch {
		case leader >= 0 && s.LeaderID != leader:
			return fmt.Errorf("leader %d, want %d", s.LeaderID, leader)
		case !slices.Equal(slices.Sorted(slices.Values(s.Voters)), voters):
			return fmt.Errorf("leader %d: voters %v, want %v", s.LeaderID, s.Voters, voters)
		case observers != nil && !slices.Equal(obs, observers):
			return fmt.Errorf("leader %d: observers %v, want %v", s.LeaderID, obs, observers)
		}
		return nil
	}
}

// MemberIDs are the members' node ids, sorted.
func MemberIDs(members ...*MixedMember) []int32 {
	var ids []int32
	for _, m := range members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids
}

// A three-voter dynamic Apache quorum, formatted with
// --initial-controllers, with two Apache brokers serving a producer and a
// consumer, has each controller replaced in turn by kraftd and then each
// kraftd replaced by Apache again, the way Apache's operations guide
// replaces a controller: remove-controller the old one, stop it, format the
// new one --no-initial-controllers (same node id and port, new directory
// id), start it, wait for it to show as an observer, add-controller it.
// Each step logs a "rolling-step" line with how long it took and the
// longest stretches with no quorum leader and with no produce
// acknowledgement. Nothing acknowledged is lost and every step leaves the
// brokers serving. A broker's kafka-configs --describe --all, after
// dynamic broker configs were written through the all-kraftd quorum, shows
// the same configs and synonym sources as after the same configs went
// through the Apache quorum it started with; a kraftd controller describes
// its own configuration (every KafkaConfig key) as the Apache controller
// it replaced did; and GROUP and CLIENT_METRICS
// config changes (groupConfigChanges) get the same answers from either
// quorum, and are described alike by a broker and a controller.
func TestRollingReplacement(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 6) // three Apache controllers, two brokers, a tool
		at := stamp(t)
		r := newRollingCluster(t, v)
		at("Apache quorum of three and two brokers serving traffic")
		// What a broker describes of itself after dynamic configs went
		// through Apache's quorum, and then through kraftd's.
		described := setAndDescribeBroker(t, v, r.brokers.Brokers[0], 0)
		at("broker configs set through Apache's quorum and described")
		apacheOwn := describeOwnConfig(t, v, r.live[0])
		at("an Apache controller's own configuration described")
		// And what GROUP and CLIENT_METRICS changes get, and leave, through
		// Apache's quorum and then through kraftd's.
		apacheAnswers, apacheViaBroker, apacheViaController := groupConfigRound(t, r.brokers.Addrs()[0], r.live[0].Addr(), 0)
		at("group and client metrics configs changed through Apache's quorum")
		step := 0
		for _, kind := range []string{KindKraftd, KindApache} {
			for id := int32(1); id <= 3; id++ {
				step++
				r.replace(step, id, kind)
			}
			for _, m := range r.live {
				if m.Kind != kind {
					t.Fatalf("after the round to %s, %s is still a voter", kind, m)
				}
			}
			topic := "all-" + kind
			CreateTopic(t, r.brokers.Addrs()[0], topic, 2, 2, nil)
			r.brokers.WaitPartitions(t, topic+" created by an all-"+kind+" quorum", topic, fullIsr(r.brokers.IDs()))
			at("every voter is " + kind)
			if kind == KindKraftd {
				compareDescribeAll(t, described, setAndDescribeBroker(t, v, r.brokers.Brokers[0], 1), 1)
				at("broker configs set through kraftd's quorum described as through Apache's")
				compareOwnConfig(t, apacheOwn, describeOwnConfig(t, v, r.live[0]), 1)
				at("a kraftd controller's own configuration described as Apache's")
				answers, viaBroker, viaController := groupConfigRound(t, r.brokers.Addrs()[0], r.live[0].Addr(), 1)
				checkGroupConfigsAlike(t, apacheAnswers, answers, "group and client metrics config changes through a broker")
				checkGroupConfigsAlike(t, apacheViaBroker, viaBroker, "their DescribeConfigs through a broker")
				checkGroupConfigsAlike(t, apacheViaController, viaController, "their DescribeConfigs through a controller")
				at("group and client metrics configs answered and described as by Apache's quorum")
			}
		}
		r.watch.Stop()
		end := time.Now()
		t.Logf("rolling-total version=%s leaderless-max=%v ack-gap-max=%v elapsed=%v", v,
			r.watch.LongestLeaderless(r.began, end).Round(time.Millisecond), r.traffic.LongestAckGap(r.began, end).Round(time.Millisecond),
			end.Sub(r.began).Round(time.Millisecond))
		n := r.traffic.StopAndVerify()
		r.brokers.WaitUnfenced(t, r.brokers.IDs()...)
		at(fmt.Sprintf("%d acknowledged records all read back", n))
	})
}

// rollingCluster is the cluster of TestRollingReplacement: controllers 1-3
// on fixed ports (a replacement takes its predecessor's port, so the
// brokers' bootstrap servers stay right), two brokers, traffic, and a
// LeaderWatch over the three ports.
type rollingCluster struct {
	t         *testing.T
	version   string
	clusterID string
	bootstrap string
	live      []*MixedMember // by node id
	brokers   *BrokerSet
	traffic   *Traffic
	watch     *LeaderWatch
	began     time.Time
}

// rollingControllerProps are in every controller's file, Apache's and
// kraftd's: a group's unset session timeout, its bounds and its synonyms
// follow them (GROUP rules, describeGroupConfigs), and the controllers'
// own descriptions show them as static configs.
var rollingControllerProps = map[string]string{
	"group.consumer.session.timeout.ms":     "50000",
	"group.consumer.max.session.timeout.ms": "70000",
}

func newRollingCluster(t *testing.T, v string) *rollingCluster {
	ports := FreePorts(t, 3)
	r := &rollingCluster{t: t, version: v, clusterID: NewUUID()}
	var initial []string
	dirs := []string{NewUUID(), NewUUID(), NewUUID()}
	for i, p := range ports {
		initial = append(initial, fmt.Sprintf("%d@%s:%s", i+1, Addr(p), dirs[i]))
	}
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, Addr(p))
	}
	r.bootstrap = strings.Join(addrs, ",")
	for i, p := range ports {
		m := NewMixedDynamicMemberWith(t, v, KindApache, int32(i+1), p, r.bootstrap, r.clusterID, rollingControllerProps,
			"--initial-controllers", strings.Join(initial, ","))
		if got := m.DirectoryID(t); got != dirs[i] {
			t.Fatalf("%s formatted with directory id %s, --initial-controllers gave %s", m, got, dirs[i])
		}
		r.live = append(r.live, m)
	}
	t.Cleanup(func() { StopMixed(r.live...) })
	for _, m := range r.live {
		m.Start(t)
	}
	WaitMixedLeader(t, r.live, wantQuorum(-1, []int32{1, 2, 3}, nil))
	r.brokers = StartBrokers(t, v, "", r.clusterID, []int{101, 102}, DynamicBrokerProps(r.bootstrap))
	CreateTopic(t, r.brokers.Addrs()[0], trafficTopic, 2, 2, nil)
	r.brokers.WaitPartitions(t, "traffic topic ready", trafficTopic, fullIsr(r.brokers.IDs()))
	r.watch = WatchLeader(t, addrs)
	r.traffic = StartTraffic(t, r.brokers.Addrs(), trafficTopic, 2)
	r.traffic.WaitProgress("start", r.traffic.Mark(), 100)
	r.began = time.Now()
	return r
}

// replace swaps controller id for a new one of kind, as Apache's guide
// says, and logs the step's figures.
func (r *rollingCluster) replace(step int, id int32, kind string) {
	t, v := r.t, r.version
	t.Helper()
	old := MemberByID(r.live, id)
	others := Without(r.live, old)
	othersAddrs := strings.Join(MixedAddrs(others...), ",")
	start := time.Now()
	before := WaitMixedLeader(t, r.live, nil)
	mark := r.traffic.Mark()

	RemoveController(t, v, othersAddrs, id, old.DirectoryID(t))
	WaitMixedLeader(t, others, wantQuorum(-1, MemberIDs(others...), nil))
	removed := time.Now()
	StopMixed(old)

	next := NewMixedDynamicMemberWith(t, v, kind, id, old.Port, r.bootstrap, r.clusterID, rollingControllerProps, "--no-initial-controllers")
	next.Start(t)
	r.live = append(others, next)
	slices.SortFunc(r.live, func(a, b *MixedMember) int { return int(a.ID - b.ID) })
	WaitMixedLeader(t, r.live, ObservesAs(id, next.DirectoryID(t)))
	joined := time.Now()

	AddController(t, v, othersAddrs, next)
	after := WaitMixedLeader(t, r.live, func(s *QuorumStatus) error {
		if err := wantQuorum(-1, []int32{1, 2, 3}, nil)(s); err != nil {
			return err
		}
		return VotersCaughtUp(s.HighWatermark)(s)
	})
	added := time.Now()
	r.traffic.WaitProgress(fmt.Sprintf("step %d, %s added", step, next), mark, 50)

	t.Logf("rolling-step version=%s step=%d node=%d %s->%s leader-before=%s leader-after=%s leaders-seen=%v remove=%v rejoin=%v add=%v total=%v leaderless-max=%v ack-gap-max=%v",
		v, step, id, old.Kind, kind, MemberByID(append(others, old), before.LeaderID), MemberByID(r.live, after.LeaderID),
		r.watch.Leaders(start, added), removed.Sub(start).Round(time.Millisecond), joined.Sub(removed).Round(time.Millisecond),
		added.Sub(joined).Round(time.Millisecond), added.Sub(start).Round(time.Millisecond),
		r.watch.LongestLeaderless(start, added).Round(time.Millisecond), r.traffic.LongestAckGap(start, added).Round(time.Millisecond))
}
