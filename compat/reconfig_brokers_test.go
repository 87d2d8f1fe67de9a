package compat

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Apache's quorum-reconfiguration system test
// (tests/kafkatest/tests/core/quorum_reconfiguration_test.py), with two
// Apache brokers serving a producer and a consumer throughout, with kraftd
// as the first node: kraftd node 1 is formatted --standalone and leads
// alone; Apache nodes 2 and 3, formatted --no-initial-controllers, each
// start, show as observers and are added with add-controller; then
// remove-controller takes out the leader, node 1, and describe --status
// shows a new leader among 2 and 3 and node 1 as an observer beside the
// brokers. A topic created afterwards shows the new leader serving the
// brokers, and nothing acknowledged is lost. The same with Apache as the
// first node begins TestRollingReplacement, whose cluster goes on from
// there (one bring-up of a cluster with brokers fewer per version).
func TestQuorumReconfigurationWithBrokers(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 5) // two brokers, two Apache controllers, a tool
		t.Run("first-"+KindKraftd, func(t *testing.T) {
			r := reconfigureWithBrokers(t, v, KindKraftd)
			n := r.traffic.StopAndVerify()
			r.brokers.WaitUnfenced(t, r.brokers.IDs()...)
			t.Logf("%d acknowledged records all read back", n)
			r.shutdown()
		})
	})
}

// reconfigureWithBrokers runs Apache's quorum-reconfiguration system test
// with first (kraftd or Apache) as node 1 and the other kind as nodes 2
// and 3, and returns the cluster as it leaves it: voters 2 and 3, node 1
// removed but still running as an observer, the brokers serving traffic.
// Every controller's file has rollingControllerProps, which
// TestRollingReplacement, going on with the cluster, needs.
func reconfigureWithBrokers(t *testing.T, v, first string) *rollingCluster {
	at := stamp(t)
	joinerKind := KindApache
	if first == KindApache {
		joinerKind = KindKraftd
	}
	ports := FreePorts(t, 3)
	r := &rollingCluster{t: t, version: v, clusterID: NewUUID()}
	// Every node and broker is given all three controllers, as Apache's
	// system test does: an observer that lost its leader (node 1 once
	// removed) finds the new one only through the bootstrap servers.
	for _, p := range ports {
		r.addrs = append(r.addrs, Addr(p))
	}
	r.bootstrap = strings.Join(r.addrs, ",")
	leader := NewMixedDynamicMemberWith(t, v, first, 1, ports[0], r.bootstrap, r.clusterID, rollingControllerProps, "--standalone")
	r.live = []*MixedMember{leader}
	t.Cleanup(r.stop)
	leader.Start(t)
	WaitMixedLeader(t, r.live, wantQuorum(1, []int32{1}, nil))

	brokers := StartBrokers(t, v, "", r.clusterID, []int{101, 102}, DynamicBrokerProps(r.bootstrap))
	r.brokers = brokers
	CreateTopic(t, brokers.Addrs()[0], trafficTopic, 2, 2, nil)
	brokers.WaitPartitions(t, "traffic topic ready", trafficTopic, fullIsr(brokers.IDs()))
	traffic := StartTraffic(t, brokers.Addrs(), trafficTopic, 2)
	r.traffic = traffic
	traffic.WaitProgress("start", traffic.Mark(), 100)
	at(fmt.Sprintf("%s node 1 leads alone; brokers serve traffic", first))

	for _, id := range []int32{2, 3} {
		joiner := NewMixedDynamicMemberWith(t, v, joinerKind, id, ports[id-1], r.bootstrap, r.clusterID, rollingControllerProps, "--no-initial-controllers")
		joiner.Start(t)
		r.live = append(r.live, joiner)
		voters := MemberIDs(r.live...)
		WaitMixedLeader(t, r.live, wantQuorum(1, voters[:len(voters)-1], []int32{id, 101, 102}))
		AddController(t, v, r.bootstrap, joiner)
		WaitMixedLeader(t, r.live, func(s *QuorumStatus) error {
			if err := wantQuorum(1, voters, []int32{101, 102})(s); err != nil {
				return err
			}
			return VotersCaughtUp(s.HighWatermark)(s)
		})
		at(fmt.Sprintf("%s joined as observer and was added", joiner))
	}

	mark := traffic.Mark()
	all := r.live
	r.live, r.observer = all[1:], leader
	RemoveController(t, v, strings.Join(MixedAddrs(r.live...), ","), r.live, 1, leader.DirectoryID(t))
	after := WaitMixedLeader(t, r.live, wantQuorum(-1, []int32{2, 3}, []int32{1, 101, 102}))
	at(fmt.Sprintf("removed leader 1; %s leads", MemberByID(all, after.LeaderID)))

	st := DescribeStatus(t, v, strings.Join(MixedAddrs(r.live...), ","))
	if st.LeaderID != 2 && st.LeaderID != 3 || !slices.Equal(st.Voters, []int32{2, 3}) || !slices.Equal(st.Observers, []int32{1, 101, 102}) {
		t.Errorf("describe --status: leader %d, voters %v, observers %v; want leader 2 or 3, voters [2 3], observers [1 101 102]\n%s",
			st.LeaderID, st.Voters, st.Observers, st.Text)
	}
	CreateTopic(t, brokers.Addrs()[1], "after-reconfiguration", 2, 2, nil)
	brokers.WaitPartitions(t, "topic created by the new leader", "after-reconfiguration", fullIsr(brokers.IDs()))
	traffic.WaitProgress("after removing the leader", mark, 100)
	at("the new leader created a topic; traffic goes on")
	return r
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

// Apache's quorum-reconfiguration system test with Apache as the first
// node, and then, on the same cluster, a rolling replacement of every
// controller, first by Apache and then by kraftd, the way Apache's
// operations guide replaces a controller: remove-controller the old one,
// stop it, format the new one --no-initial-controllers (same node id and
// port, new directory id), start it, wait for it to show as an observer,
// add-controller it. Two Apache brokers serve a producer and a consumer
// throughout.
//
// The reconfiguration: Apache node 1 is formatted --standalone and leads
// alone; kraftd nodes 2 and 3 join as observers and are added; the Apache
// leader is removed, describe --status shows a kraftd leader, voters 2 and
// 3 and observers 1, 101 and 102, and the new leader creates a topic.
// Then node 1 comes back as kraftd (the second half of a replacement whose
// remove-controller the reconfiguration did), and the voters are all
// kraftd; each is replaced by Apache, and each Apache again by kraftd.
//
// Each step logs a "rolling-step" line with how long it took and the
// longest stretches with no quorum leader and with no produce
// acknowledgement. Nothing acknowledged is lost and every step leaves the
// brokers serving. A broker's kafka-configs --describe --all, after
// dynamic broker configs were written through the all-kraftd quorum of the
// end, shows the same configs and synonym sources as after the same
// configs went through the all-Apache quorum before it; a kraftd
// controller describes its own configuration (every KafkaConfig key) as
// the Apache controller it replaced did; and GROUP and CLIENT_METRICS
// config changes (groupConfigChanges) get the same answers from either
// quorum, and are described alike by a broker and a controller.
//
// Until issue 29 the replacement ran on a cluster of its own, three Apache
// controllers formatted --initial-controllers; TestInitialControllersFormat
// keeps that format in the tests.
func TestRollingReplacement(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 6) // three Apache controllers, two brokers, a tool
		at := stamp(t)
		r := reconfigureWithBrokers(t, v, KindApache)
		at("reconfiguration with Apache first done; the rolling replacement begins")
		r.watch = WatchLeader(t, r.addrs)
		r.began = time.Now()
		step := 1
		r.replace(step, 1, KindKraftd) // Apache node 1, removed as leader above
		at("kraftd node 1 added in place of the removed Apache leader; every voter is kraftd")
		var (
			described                                           map[string]describedConfig
			apacheOwn                                           ownConfig
			apacheAnswers, apacheViaBroker, apacheViaController []string
		)
		for _, kind := range []string{KindApache, KindKraftd} {
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
			if kind == KindApache {
				// What a broker describes of itself after dynamic configs
				// went through Apache's quorum (and later through kraftd's),
				// an Apache controller's own configuration, and what GROUP
				// and CLIENT_METRICS changes get, and leave, through
				// Apache's quorum.
				described = setAndDescribeBroker(t, v, r.brokers.Brokers[0], 0)
				at("broker configs set through Apache's quorum and described")
				apacheOwn = describeOwnConfig(t, v, r.live[0])
				at("an Apache controller's own configuration described")
				apacheAnswers, apacheViaBroker, apacheViaController = groupConfigRound(t, r.brokers.Addrs()[0], r.live[0].Addr(), 0)
				at("group and client metrics configs changed through Apache's quorum")
				continue
			}
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
		r.watch.Stop()
		end := time.Now()
		t.Logf("rolling-total version=%s leaderless-max=%v ack-gap-max=%v elapsed=%v", v,
			r.watch.LongestLeaderless(r.began, end).Round(time.Millisecond), r.traffic.LongestAckGap(r.began, end).Round(time.Millisecond),
			end.Sub(r.began).Round(time.Millisecond))
		n := r.traffic.StopAndVerify()
		r.brokers.WaitUnfenced(t, r.brokers.IDs()...)
		at(fmt.Sprintf("%d acknowledged records all read back", n))
		r.shutdown()
	})
}

// rollingCluster is the cluster reconfigureWithBrokers leaves and
// TestRollingReplacement goes on with: controllers 1-3 on fixed ports (a
// replacement takes its predecessor's port, so the brokers' bootstrap
// servers stay right), two brokers, traffic, and, for the replacement, a
// LeaderWatch over the three ports.
type rollingCluster struct {
	t         *testing.T
	version   string
	clusterID string
	addrs     []string       // the controllers' ports, node 1 first
	bootstrap string         // addrs, comma-separated
	live      []*MixedMember // the voters, by node id
	observer  *MixedMember   // a removed voter still running, if any
	brokers   *BrokerSet
	traffic   *Traffic
	watch     *LeaderWatch
	began     time.Time
}

// stop stops every controller still running, all at once.
func (r *rollingCluster) stop() {
	all := slices.Clone(r.live)
	if r.observer != nil {
		all = append(all, r.observer)
	}
	StopMixed(all...)
}

// shutdown stops the brokers, at once and while the quorum still answers
// their controlled shutdown, and then the controllers, at once. Left to
// the cleanups, the processes stop one at a time, newest first: the
// controllers before the brokers, each of which then waits StopTimeout
// for a controller that is gone before it is killed.
func (r *rollingCluster) shutdown() {
	start := time.Now()
	var ps []*Process
	for _, b := range r.brokers.Brokers {
		ps = append(ps, b.Proc)
	}
	StopAll(ps...)
	brokers := time.Since(start)
	r.stop()
	r.t.Logf("brokers stopped in %v, then the controllers in %v", brokers.Round(time.Millisecond), (time.Since(start) - brokers).Round(time.Millisecond))
}

// rollingControllerProps are in every controller's file, Apache's and
// kraftd's: a group's unset session timeout, its bounds and its synonyms
// follow them (GROUP rules, describeGroupConfigs), and the controllers'
// own descriptions show them as static configs.
var rollingControllerProps = map[string]string{
	"group.consumer.session.timeout.ms":     "50000",
	"group.consumer.max.session.timeout.ms": "70000",
}

// replace swaps controller id for a new one of kind, as Apache's guide
// says, and logs the step's figures. If id is no voter but the removed
// one still running (r.observer), remove-controller was done already: it
// is stopped and replaced.
func (r *rollingCluster) replace(step int, id int32, kind string) {
	t, v := r.t, r.version
	t.Helper()
	old := MemberByID(r.live, id)
	removedBefore := old == nil
	if removedBefore {
		if r.observer == nil || r.observer.ID != id {
			t.Fatalf("step %d: node %d is neither a voter nor the removed one", step, id)
		}
		old = r.observer
	}
	others := Without(r.live, old)
	othersAddrs := strings.Join(MixedAddrs(others...), ",")
	start := time.Now()
	before := WaitMixedLeader(t, r.live, nil)
	mark := r.traffic.Mark()

	if !removedBefore {
		RemoveController(t, v, othersAddrs, others, id, old.DirectoryID(t))
		WaitMixedLeader(t, others, wantQuorum(-1, MemberIDs(others...), nil))
	}
	removed := time.Now()
	StopMixed(old)
	if removedBefore {
		r.observer = nil
	}

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

// Apache's kafka-storage format --initial-controllers, and kraftd format
// with the same list, of node 1 of three controllers: each gives the
// directory the directory id the list gives node 1, and writes the same
// kraft.version and voter set (three voters, each with its directory id
// and endpoint) into the bootstrap snapshot, as kraftd dump-log prints
// them. Until issue 29 TestRollingReplacement started from three Apache
// controllers so formatted; its cluster now comes from the
// reconfiguration (--standalone and add-controller), and this keeps the
// format in the tests for one tool JVM per version.
func TestInitialControllersFormat(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 1) // kafka-storage format
		ports := FreePorts(t, 3)
		dirs := []string{NewUUID(), NewUUID(), NewUUID()}
		var addrs, initial []string
		for i, p := range ports {
			addrs = append(addrs, Addr(p))
			initial = append(initial, fmt.Sprintf("%d@%s:%s", i+1, Addr(p), dirs[i]))
		}
		clusterID := NewUUID()
		written := map[string]string{}
		for _, kind := range []string{KindApache, KindKraftd} {
			m := NewMixedDynamicMember(t, v, kind, 1, ports[0], strings.Join(addrs, ","), clusterID, "--initial-controllers", strings.Join(initial, ","))
			if got := m.DirectoryID(t); got != dirs[0] {
				t.Errorf("%s formatted with directory id %s, --initial-controllers gave %s", m, got, dirs[0])
			}
			dump := KraftdDumpLog(t, filepath.Join(m.LogDir(), "00000000000000000000-0000000000.checkpoint"))
			var records []string
			for _, line := range strings.Split(dump, "\n") {
				for _, name := range []string{"KRaftVersionRecord: ", "VotersRecord: "} {
					if i := strings.Index(line, name); i >= 0 {
						records = append(records, line[i:])
					}
				}
			}
			written[kind] = strings.Join(records, "\n")
			if len(records) != 2 || !strings.Contains(written[kind], `"kRaftVersion":1`) {
				t.Errorf("%s's bootstrap snapshot: want one KRaftVersionRecord of kraft.version 1 and one VotersRecord; dump-log printed\n%s", m, dump)
			}
			for i, dir := range dirs {
				if !strings.Contains(written[kind], fmt.Sprintf(`"voterDirectoryId":%q,"voterId":%d`, dir, i+1)) {
					t.Errorf("%s's voter set lacks voter %d with directory %s:\n%s", m, i+1, dir, written[kind])
				}
			}
		}
		if written[KindApache] != written[KindKraftd] {
			t.Errorf("bootstrap snapshots differ:\nApache: %s\nkraftd: %s", written[KindApache], written[KindKraftd])
		} else {
			t.Logf("Apache's and kraftd's bootstrap snapshots hold the same KRaft records:\n%s", written[KindApache])
		}
	})
}
