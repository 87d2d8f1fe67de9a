package compat

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// brokerIDs are the Apache brokers' node ids, apart from the controllers'.
var brokerIDs = []int{101, 102, 103}

// Three stock Apache brokers on a three-node kraftd quorum: they register,
// are unfenced and serve; kafka-metadata-quorum lists them as observers;
// kafka-topics creates, describes, grows and deletes a topic through a
// broker (CreateTopics and friends reach kraftd in Envelopes);
// kafka-configs alters and describes a topic config; SIGKILL of a broker
// fences it once its session runs out and moves its leaderships away;
// kafka-features describes and upgrades through the controller.
func TestApacheBrokersOnKraftd(t *testing.T) {
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 3)
		at := stamp(t)
		ctls := newKraftdStaticQuorum(t, 3)
		clusterID := clusterIDOf(t, ctls[0])
		var voters []string
		for _, n := range ctls {
			voters = append(voters, fmt.Sprintf("%d@%s", n.ID, n.Addr()))
			n.start(t)
		}
		leader := WaitLeader(t, addrsOf(ctls), nil)
		at(fmt.Sprintf("kraftd leader %d", leader.LeaderID))

		var brokers []*ApacheBroker
		for _, id := range brokerIDs {
			b := NewApacheBroker(t, v, id, strings.Join(voters, ","), nil)
			b.Format(t, clusterID)
			brokers = append(brokers, b)
		}
		at("brokers formatted")
		for _, b := range brokers {
			b.Start(t)
		}
		want := []int32{101, 102, 103}
		Eventually(t, ReadyTimeout, "three unfenced brokers", brokers[0].Proc, func() error {
			m, err := Metadata(brokers[0].Addr())
			if err != nil {
				return err
			}
			if !slices.Equal(m.Brokers, want) {
				return fmt.Errorf("brokers %v, want %v", m.Brokers, want)
			}
			return nil
		})
		at("brokers running")

		// The brokers fetch the metadata log as observers.
		var controllerAddrs []string
		for _, n := range ctls {
			controllerAddrs = append(controllerAddrs, n.Addr())
		}
		WaitLeader(t, controllerAddrs, func(s *QuorumStatus) error {
			got := slices.Sorted(slices.Values(s.Observers))
			if !slices.Equal(got, want) {
				return fmt.Errorf("observers %v, want %v", got, want)
			}
			return nil
		})
		out, err := MetadataQuorum(t, v, "--bootstrap-controller", strings.Join(controllerAddrs, ","), "describe", "--replication")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kafka-metadata-quorum describe --replication:\n%s", out)
		for _, id := range brokerIDs {
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s.*Observer`, id)).MatchString(out) {
				t.Errorf("broker %d is not listed as an observer", id)
			}
		}
		at("observers listed")

		bootstrap := brokers[0].Addr()
		topics := func(args ...string) string {
			t.Helper()
			out, err := toolOutput(t, v, MainTopics, append([]string{"--bootstrap-server", bootstrap}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		out = topics("--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "3")
		if !strings.Contains(out, "Created topic orders") {
			t.Errorf("kafka-topics --create printed %q", out)
		}
		out = topics("--describe", "--topic", "orders")
		t.Logf("kafka-topics --describe:\n%s", out)
		if !strings.Contains(out, "PartitionCount: 3") || !strings.Contains(out, "ReplicationFactor: 3") {
			t.Errorf("describe does not show 3 partitions of 3 replicas")
		}
		topics("--alter", "--topic", "orders", "--partitions", "6")
		Eventually(t, ReadyTimeout, "six partitions", nil, func() error {
			m, err := Metadata(bootstrap, "orders")
			if err != nil {
				return err
			}
			if n := len(m.Leaders["orders"]); n != 6 {
				return fmt.Errorf("%d partitions", n)
			}
			return nil
		})
		at("topic created and grown")

		configs := func(args ...string) string {
			t.Helper()
			out, err := toolOutput(t, v, ConfigCommandClass(v), append([]string{"--bootstrap-server", bootstrap, "--entity-type", "topics", "--entity-name", "orders"}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		configs("--alter", "--add-config", "retention.ms=3600000")
		Eventually(t, ReadyTimeout, "retention.ms visible", nil, func() error {
			if out := configs("--describe"); !strings.Contains(out, "retention.ms=3600000") {
				return fmt.Errorf("kafka-configs --describe: %q", out)
			}
			return nil
		})
		at("topic config altered")

		// SIGKILL a broker that leads a partition: once its session times
		// out it is fenced and its leaderships move to the others.
		m, err := Metadata(bootstrap, "orders")
		if err != nil {
			t.Fatal(err)
		}
		victim := brokers[2]
		victimID := int32(victim.NodeID)
		if !slices.Contains(slices.Collect(mapsValues(m.Leaders["orders"])), victimID) {
			t.Fatalf("broker %d leads nothing of %v", victimID, m.Leaders["orders"])
		}
		victim.Proc.Kill()
		killed := time.Now()
		Eventually(t, ReadyTimeout, "killed broker fenced and leaderships moved", nil, func() error {
			m, err := Metadata(bootstrap, "orders")
			if err != nil {
				return err
			}
			if slices.Contains(m.Brokers, victimID) {
				return fmt.Errorf("broker %d still listed: %v", victimID, m.Brokers)
			}
			for p, l := range m.Leaders["orders"] {
				if l == victimID || l < 0 {
					return fmt.Errorf("partition %d led by %d", p, l)
				}
			}
			return nil
		})
		at(fmt.Sprintf("broker fenced %v after SIGKILL", time.Since(killed).Round(time.Second)))

		topics("--delete", "--topic", "orders")
		Eventually(t, ReadyTimeout, "topic deleted", nil, func() error {
			if out := topics("--list"); strings.Contains(out, "orders") {
				return fmt.Errorf("still listed: %q", out)
			}
			return nil
		})
		at("topic deleted")

		features, err := Features(t, v, "--bootstrap-controller", leaderAddr(t, ctls), "describe")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kafka-features describe:\n%s", features)
		if !strings.Contains(features, "Feature: metadata.version") {
			t.Errorf("kafka-features describe lacks metadata.version")
		}
		// UpdateFeatures straight to the controller: every registered broker
		// and controller must support the new level.
		if out, err := Features(t, v, "--bootstrap-controller", leaderAddr(t, ctls), "upgrade", "--feature", "share.version=1"); err != nil {
			t.Fatalf("kafka-features upgrade: %v\n%s", err, out)
		}
		features, err = Features(t, v, "--bootstrap-controller", leaderAddr(t, ctls), "describe")
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`Feature: share.version\s+SupportedMinVersion: \d+\s+SupportedMaxVersion: \d+\s+FinalizedVersionLevel: 1\b`).MatchString(features) {
			t.Errorf("share.version not at level 1 after upgrade:\n%s", features)
		}
	})
}

func mapsValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

func leaderAddr(t *testing.T, nodes []*kraftdNode) string {
	s := WaitLeader(t, addrsOf(nodes), nil)
	return nodeByID(nodes, s.LeaderID).Addr()
}

// clusterIDOf reads the cluster id a kraftd node was formatted with.
func clusterIDOf(t *testing.T, n *kraftdNode) string {
	t.Helper()
	b := readFile(t, n.Dir+"/meta.properties")
	id := ParseProperties(b)["cluster.id"]
	if id == "" {
		t.Fatalf("no cluster.id in %s/meta.properties", n.Dir)
	}
	return id
}
