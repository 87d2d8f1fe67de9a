package compat

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxHandovers bounds the leader kills of the mixed-quorum broker test.
// Killing kraftd always hands over to Apache, and killTowards steers the
// kill of an Apache leader towards kraftd, so a few rounds suffice.
const maxHandovers = 6

// Two Apache brokers on a quorum of one kraftd and two Apache controllers.
// The active controller is SIGKILLed and restarted again and again until
// the lead has passed from Apache to kraftd and from kraftd to Apache; each
// new leader replays the other implementation's records, takes the
// brokers' heartbeats and creates a topic for them, while a franz-go
// producer and consumer keep going. In the end nothing acknowledged is
// lost, no broker was ever fenced, kraftd rejected none of Apache's records
// and no Apache controller hit a metadata fault.
func TestApacheBrokersOnMixedQuorum(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 4) // two Apache controllers, two brokers
		at := stamp(t)
		members, voters, clusterID := newBrokerQuorum(t, v, "kraftd", "Apache", "Apache")
		startBrokerQuorum(t, members)
		cur := WaitLeader(t, Addrs(members...), nil)
		at(fmt.Sprintf("first leader %s", memberByID(members, cur.LeaderID)))

		brokers := StartBrokers(t, v, voters, clusterID, []int{101, 102}, nil)
		at("brokers running")
		CreateTopic(t, brokers.Addrs()[0], trafficTopic, 2, 2, nil)
		brokers.WaitPartitions(t, "traffic topic ready", trafficTopic, fullIsr(brokers.IDs()))
		traffic := StartTraffic(t, brokers.Addrs(), trafficTopic, 2)
		traffic.WaitProgress("start", traffic.Mark(), 100)
		at("producer and consumer running")

		handovers := map[string]int{} // "Apache->kraftd" and "kraftd->Apache"
		for round := 1; handovers["Apache->kraftd"] == 0 || handovers["kraftd->Apache"] == 0 || round <= 3; round++ {
			if round > maxHandovers {
				t.Fatalf("after %d leader kills the handovers were %v; want both directions", maxHandovers, handovers)
			}
			old := memberByID(members, cur.LeaderID)
			rest := without(members, old)
			mark := traffic.Mark()
			if handovers["Apache->kraftd"] == 0 {
				killTowards(t, old, rest, "kraftd")
			} else {
				old.Proc().Kill()
			}
			cur = WaitLeader(t, Addrs(rest...), func(s *QuorumStatus) error {
				if s.LeaderID == old.ID() {
					return fmt.Errorf("still led by the killed %s", old)
				}
				return nil
			})
			next := memberByID(members, cur.LeaderID)
			handovers[old.Kind()+"->"+next.Kind()]++
			traffic.WaitProgress(fmt.Sprintf("round %d, %s leading", round, next), mark, 100)
			// The new leader writes a topic for the brokers.
			topic := fmt.Sprintf("round-%d", round)
			CreateTopic(t, brokers.Addrs()[round%2], topic, 2, 2, nil)
			brokers.WaitPartitions(t, topic+" ready", topic, fullIsr(brokers.IDs()))

			restarted := time.Now()
			old.Start(t)
			cur = WaitLeader(t, Addrs(members...), voterCaughtUp(old.ID(), restarted, cur.HighWatermark))
			at(fmt.Sprintf("round %d: killed %s, %s took over; restarted, it caught up", round, old, next))
		}
		t.Logf("handovers: %v", handovers)

		n := traffic.StopAndVerify()
		at(fmt.Sprintf("%d acknowledged records all read back", n))
		brokers.WaitUnfenced(t, brokers.IDs()...)
		checkMixedLogs(t, members)
	})
}

// killTowards SIGKILLs the leader so that the survivor of kind want, if
// there is one, wins the election. Left alone the survivors race, and on
// this machine the Apache one mostly wins. So the other survivor is paused
// (SIGSTOP) until the leader has seen the wanted one replicate past
// everything the paused one can hold, and resumed once the leader is dead:
// a voter whose log is behind cannot win a vote.
func killTowards(t *testing.T, leader *quorumMember, survivors []*quorumMember, want string) {
	t.Helper()
	winner, lagger := survivors[0], survivors[1]
	if winner.Kind() != want {
		winner, lagger = lagger, winner
	}
	if winner.Kind() != want || lagger.Kind() == want {
		leader.Proc().Kill()
		return
	}
	if err := lagger.Proc().Pause(); err != nil {
		t.Fatal(err)
	}
	// An answer to the paused node's last fetch may still sit in its
	// socket; it left the leader at most one fetch wait (500 ms) after that
	// fetch. Once the leader has not heard from it for longer than that,
	// the leader's log end bounds what it can hold.
	bound := int64(-1)
	Eventually(t, ReadyTimeout, fmt.Sprintf("%s ahead of the paused %s", winner, lagger), nil, func() error {
		s, err := DescribeQuorum(leader.Addr())
		if err != nil {
			return err
		}
		state := map[int32]kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
		for _, v := range s.Resp.Topics[0].Partitions[0].CurrentVoters {
			state[v.ReplicaID] = v
		}
		if bound < 0 {
			if silent := state[leader.ID()].LastFetchTimestamp - state[lagger.ID()].LastFetchTimestamp; silent < 1000 {
				return fmt.Errorf("%s last fetched %d ms ago", lagger, silent)
			}
			bound = state[leader.ID()].LogEndOffset
		}
		if w := state[winner.ID()].LogEndOffset; w <= bound {
			return fmt.Errorf("%s at %d, %s may hold up to %d", winner, w, lagger, bound)
		}
		return nil
	})
	leader.Proc().Kill()
	if err := lagger.Proc().Resume(); err != nil {
		t.Fatal(err)
	}
}

// apacheFault matches what an Apache controller's fault handlers log, for
// instance when it cannot replay a metadata record.
var apacheFault = regexp.MustCompile(`(?m)^.*Encountered .*fault: .*$`)

// checkMixedLogs reads the kraftd member's log and every member's output:
// no broker fencing since the brokers registered (none was stopped), no
// record rejected by kraftd's image, no metadata fault in Apache's.
func checkMixedLogs(t *testing.T, members []*quorumMember) {
	t.Helper()
	for _, m := range members {
		out := m.Proc().Output()
		if m.Kraftd != nil {
			if i := regexp.MustCompile(`(?m)^.*skipping a record the image rejects.*$`).FindString(out); i != "" {
				t.Errorf("%s rejected a record: %s", m, i)
			}
			recs := DumpMetadataLog(t, m.Kraftd.Dir)
			var fences []string
			for _, r := range recs {
				if isFencing(r) {
					fences = append(fences, fmt.Sprintf("broker %d at offset %d", r.Int("brokerId"), r.Offset))
				}
			}
			if len(fences) > 0 {
				t.Errorf("brokers were fenced while the lead moved between controllers: %v", fences)
			}
			types := map[string]bool{}
			for _, r := range recs {
				types[r.Type] = true
			}
			t.Logf("%s holds %d records of types %v", m, len(recs), slices.Sorted(func(yield func(string) bool) {
				for k := range types {
					if !yield(k) {
						return
					}
				}
			}))
			continue
		}
		if f := apacheFault.FindString(out); f != "" {
			t.Errorf("%s logged a metadata fault: %s", m, f)
		}
	}
}
