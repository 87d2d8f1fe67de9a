package compat

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerIDs are the Apache brokers' node ids, apart from the controllers'.
var brokerIDs = []int{101, 102, 103}

// trafficTopic is written and read by franz-go throughout the failure
// checks: three partitions of three replicas, min.insync.replicas=2.
const trafficTopic = "traffic"

// brokerCluster is the cluster TestApacheBrokersOnKraftd builds once per
// Apache version and every step of it shares: three kraftd controllers
// (no automatic leader rebalancing, a delegation token secret) and the
// Apache brokers 101-103 (PLAINTEXT for the tools, SASL_PLAINTEXT with
// SCRAM-SHA-512 for clients).
type brokerCluster struct {
	v         string
	ctls      []*kraftdNode
	voters    string // controller.quorum.voters
	clusterID string
	admin     []*adminBroker // 101-103, with their SASL listeners
	brokers   *BrokerSet     // the same brokers
}

// TestApacheBrokersOnKraftd runs stock Apache brokers on a three-node
// kraftd quorum, for every Apache version: one cluster per version (see
// brokerCluster), built once, and shared by four steps that run in turn
// as subtests (go test -run 'TestApacheBrokersOnKraftd/4.4.0/JBOD' runs
// one step on a fresh cluster; a step that fails stops the later ones):
//   - Brokers (checkBrokers): registration, observers, kafka-topics and
//     kafka-configs, and a franz-go producer and consumer across a broker
//     SIGKILL, a SIGKILL of the active kraftd and a controlled shutdown.
//     First, because it asserts the exact observers and that no broker
//     but the one shut down was fenced since the failover: that holds on
//     a fresh cluster only.
//   - AdminTools (checkAdminTools): the admin tools that change metadata
//     (quotas, SCRAM users, delegation tokens, group and client metrics
//     configs, log levels), reassignment and leader elections, and
//     kafka-cluster unregister of the broker 101 the unclean election left
//     dead. It removes the user-default controller mutation quota it set.
//   - JBOD (checkJBOD): a fourth broker, 104, with two log directories;
//     the second one fails.
//   - Features (checkFeatures): kafka-features describe, share.version=1
//     and the metadata.version upgrade, which cannot be undone: last.
func TestApacheBrokersOnKraftd(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		// Three brokers and a tool at a time: broker 104 of the JBOD step
		// starts once broker 101 is down.
		ReserveJVMs(t, 3)
		at := stamp(t)
		c := startBrokerCluster(t, v)
		at("three kraftd controllers and three brokers running")
		step := func(name string, f func(t *testing.T)) {
			t.Helper()
			ok := t.Run(name, f)
			at(name)
			if !ok {
				t.Fatalf("step %s failed: the later steps, which share its cluster, are skipped", name)
			}
		}
		step("Brokers", func(st *testing.T) { checkBrokers(st, c) })
		step("AdminTools", func(st *testing.T) { checkAdminTools(st, c) })
		// Broker 104 must outlive the step: it is started on the version's t.
		step("JBOD", func(st *testing.T) { checkJBOD(st, t, c) })
		step("Features", func(st *testing.T) { checkFeatures(st, v, c.ctls) })
	})
}

// startBrokerCluster formats and starts the kraftd quorum of a
// brokerCluster and its brokers 101-103, and waits until they are
// unfenced.
func startBrokerCluster(t *testing.T, v string) *brokerCluster {
	t.Helper()
	// No automatic preferred-leader balancing: the PREFERRED check makes
	// an imbalance and wants the tool, not the timer, to fix it.
	ctls := newKraftdStaticQuorumWith(t, 3, map[string]string{
		"auto.leader.rebalance.enable": "false", "delegation.token.secret.key": adminTokenSecret})
	var voters []string
	for _, n := range ctls {
		voters = append(voters, fmt.Sprintf("%d@%s", n.ID, n.Addr()))
		n.start(t)
	}
	leader := WaitLeader(t, Addrs(ctls...), nil)
	t.Logf("kraftd leader %d", leader.LeaderID)
	c := &brokerCluster{v: v, ctls: ctls, voters: strings.Join(voters, ","), clusterID: clusterIDOf(t, ctls[0])}
	c.admin, c.brokers = startAdminBrokers(t, v, c.voters, c.clusterID, brokerIDs)
	return c
}

// checkBrokers is the Brokers step of TestApacheBrokersOnKraftd, on the
// fresh cluster, one check after the other:
//   - the brokers register, are unfenced and fetch the log as observers;
//   - kafka-topics and kafka-configs work through a broker (Envelope);
//   - a franz-go producer (acks=all) and consumer run across all of:
//   - SIGKILL of a broker: new leaders, shrunk ISRs, and after a restart
//     the broker is unfenced and the ISRs grow back (AlterPartition);
//   - SIGKILL of the active kraftd: a new one leads and no broker is fenced;
//   - SIGTERM of a broker: controlled shutdown moves its leaderships away
//     before it stops (seen in Metadata and in the controller's log);
//   - and nothing acknowledged is lost.
//
// Every broker and controller runs again at the end.
func checkBrokers(t *testing.T, c *brokerCluster) {
	v, ctls, brokers := c.v, c.ctls, c.brokers
	at := stamp(t)
	brokers.WaitUnfenced(t, brokers.IDs()...)
	checkObservers(t, v, ctls, brokers)
	at("observers listed")
	checkTopicTools(t, v, brokers)
	at("kafka-topics and kafka-configs")

	createTrafficTopic(t, v, brokers)
	traffic := StartTraffic(t, brokers.Addrs(), trafficTopic, 3)
	traffic.WaitProgress("start", traffic.Mark(), 100)
	at("producer and consumer running")

	t.Run("BrokerSIGKILL", func(t *testing.T) { checkBrokerKill(t, brokers, traffic) })
	at("broker SIGKILL and restart")
	var failoverAt int64 // committed offset when the active controller was killed
	t.Run("ControllerSIGKILL", func(t *testing.T) { failoverAt = checkControllerKill(t, ctls, brokers, traffic) })
	at("controller SIGKILL")
	t.Run("ControlledShutdown", func(t *testing.T) { checkControlledShutdown(t, ctls, brokers, traffic, failoverAt) })
	at("controlled shutdown and restart")

	n := traffic.StopAndVerify()
	at(fmt.Sprintf("%d acknowledged records all read back", n))
}

// checkObservers: the brokers fetch the metadata log as observers, and
// kafka-metadata-quorum lists them.
func checkObservers(t *testing.T, v string, ctls []*kraftdNode, brokers *BrokerSet) {
	t.Helper()
	want := brokers.IDs()
	WaitLeader(t, Addrs(ctls...), func(s *QuorumStatus) error {
		got := slices.Sorted(slices.Values(s.Observers))
		if !slices.Equal(got, want) {
			return fmt.Errorf("observers %v, want %v", got, want)
		}
		return nil
	})
	out, err := MetadataQuorum(t, v, "--bootstrap-controller", strings.Join(Addrs(ctls...), ","), "describe", "--replication")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kafka-metadata-quorum describe --replication:\n%s", out)
	for _, id := range want {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s.*Observer`, id)).MatchString(out) {
			t.Errorf("broker %d is not listed as an observer", id)
		}
	}
}

// topicsTool runs kafka-topics through the first broker.
func topicsTool(t *testing.T, v string, brokers *BrokerSet, args ...string) string {
	t.Helper()
	out, err := toolOutput(t, v, MainTopics, append([]string{"--bootstrap-server", brokers.Addrs()[0]}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkTopicTools: kafka-topics creates, describes, grows and deletes a
// topic and kafka-configs alters one; the brokers forward to kraftd.
func checkTopicTools(t *testing.T, v string, brokers *BrokerSet) {
	t.Helper()
	out := topicsTool(t, v, brokers, "--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "3")
	if !strings.Contains(out, "Created topic orders") {
		t.Errorf("kafka-topics --create printed %q", out)
	}
	out = topicsTool(t, v, brokers, "--describe", "--topic", "orders")
	t.Logf("kafka-topics --describe:\n%s", out)
	if !strings.Contains(out, "PartitionCount: 3") || !strings.Contains(out, "ReplicationFactor: 3") {
		t.Errorf("describe does not show 3 partitions of 3 replicas")
	}
	topicsTool(t, v, brokers, "--alter", "--topic", "orders", "--partitions", "6")
	Eventually(t, ReadyTimeout, "six partitions", nil, func() error {
		m, err := brokers.Metadata("orders")
		if err != nil {
			return err
		}
		if n := len(m.Leaders["orders"]); n != 6 {
			return fmt.Errorf("%d partitions", n)
		}
		return nil
	})

	configs := func(args ...string) string {
		t.Helper()
		out, err := toolOutput(t, v, ConfigCommandClass(v), append([]string{"--bootstrap-server", brokers.Addrs()[0], "--entity-type", "topics", "--entity-name", "orders"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	configs("--alter", "--add-config", "retention.ms=3600000")
	// Each tool run is a JVM start: wait until every broker (the tool's
	// admin client may ask any) describes the change, then describe once.
	waitEveryBroker(t, brokers.Addrs(), "retention.ms described", func(addr string) error {
		got, err := describedConfigs(addr, kmsg.ConfigResourceTypeTopic, "orders")
		if err != nil {
			return err
		}
		if got["retention.ms"] != "3600000" {
			return fmt.Errorf("retention.ms=%q", got["retention.ms"])
		}
		return nil
	})
	if out := configs("--describe"); !strings.Contains(out, "retention.ms=3600000") {
		t.Errorf("kafka-configs --describe: %q", out)
	}

	topicsTool(t, v, brokers, "--delete", "--topic", "orders")
	waitEveryBroker(t, brokers.Addrs(), "topic deleted", func(addr string) error {
		m, err := Metadata(addr)
		if err != nil {
			return err
		}
		if _, ok := m.Leaders["orders"]; ok {
			return fmt.Errorf("orders still listed")
		}
		return nil
	})
	if out := topicsTool(t, v, brokers, "--list"); strings.Contains(out, "orders") {
		t.Errorf("kafka-topics --list after the delete: %q", out)
	}
}

// waitEveryBroker waits until probe passes for every address in addrs (a
// tool's admin client sends many requests to whichever broker it likes).
func waitEveryBroker(t testing.TB, addrs []string, what string, probe func(addr string) error) {
	t.Helper()
	Eventually(t, ReadyTimeout, what, nil, func() error {
		for _, addr := range addrs {
			if err := probe(addr); err != nil {
				return fmt.Errorf("%s: %w", addr, err)
			}
		}
		return nil
	})
}

// describedConfigs asks addr (DescribeConfigs) for the configs of one
// resource it keeps, by name, with their values ("" for null).
func describedConfigs(addr string, typ kmsg.ConfigResourceType, name string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	req.Resources = append(req.Resources, res)
	resp, err := Request(addr, req)
	if err != nil {
		return nil, err
	}
	rs := resp.(*kmsg.DescribeConfigsResponse).Resources
	if len(rs) != 1 {
		return nil, fmt.Errorf("DescribeConfigs %v %s: %d resources answered", typ, name, len(rs))
	}
	if rs[0].ErrorCode != 0 {
		return nil, fmt.Errorf("DescribeConfigs %v %s: error %d %s", typ, name, rs[0].ErrorCode, deref(rs[0].ErrorMessage))
	}
	out := map[string]string{}
	for _, c := range rs[0].Configs {
		out[c.Name] = deref(c.Value)
	}
	return out, nil
}

// createTrafficTopic creates the producer's topic and waits until every
// partition has a leader and a full ISR.
func createTrafficTopic(t *testing.T, v string, brokers *BrokerSet) {
	t.Helper()
	topicsTool(t, v, brokers, "--create", "--topic", trafficTopic, "--partitions", "3", "--replication-factor", "3",
		"--config", "min.insync.replicas=2")
	brokers.WaitPartitions(t, "traffic topic ready", trafficTopic, fullIsr(brokers.IDs()))
}

// fullIsr checks that a partition has a leader and every broker in its ISR.
func fullIsr(all []int32) func(p, leader int32, isr []int32) error {
	return func(p, leader int32, isr []int32) error {
		if leader < 0 {
			return fmt.Errorf("no leader")
		}
		if !slices.Equal(isr, all) {
			return fmt.Errorf("ISR is not %v", all)
		}
		return nil
	}
}

// leaderOf returns the leader of a topic's partition.
func leaderOf(t *testing.T, brokers *BrokerSet, topic string, p int32) int32 {
	t.Helper()
	m, err := brokers.Metadata(topic)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := m.Leaders[topic][p]
	if !ok || l < 0 {
		t.Fatalf("%s partition %d has no leader: %v", topic, p, m.Leaders[topic])
	}
	return l
}

// checkBrokerKill: SIGKILL of a partition leader. Once its session expires
// the controller fences it, elects new leaders and shrinks the ISRs; the
// clients carry on. Restarted, it registers anew, is unfenced, and the
// leaders add it back to their ISRs once it has caught up (AlterPartition).
func checkBrokerKill(t *testing.T, brokers *BrokerSet, traffic *Traffic) {
	victimID := leaderOf(t, brokers, trafficTopic, 0)
	victim := brokers.Broker(victimID)
	var others []int32
	for _, id := range brokers.IDs() {
		if id != victimID {
			others = append(others, id)
		}
	}
	mark := traffic.Mark()
	victim.Proc.Kill()
	brokers.WaitPartitions(t, "new leaders and shrunk ISRs after SIGKILL", trafficTopic, func(p, leader int32, isr []int32) error {
		if leader < 0 || leader == victimID {
			return fmt.Errorf("not led by a live broker")
		}
		if slices.Contains(isr, victimID) {
			return fmt.Errorf("killed broker %d still in the ISR", victimID)
		}
		if !slices.Contains(isr, leader) {
			return fmt.Errorf("leader not in the ISR")
		}
		return nil
	})
	brokers.WaitUnfenced(t, others...)
	traffic.WaitProgress("after a broker SIGKILL", mark, 100)

	restartBroker(t, brokers, victim, traffic)
}

// checkControllerKill: SIGKILL of the active kraftd. Another kraftd takes
// over; the brokers' observers follow it and the clients carry on. That no
// broker was fenced for want of heartbeats is checked at the end of
// checkControlledShutdown, which needs heartbeats to reach the new leader.
// It returns the committed offset at the time of the kill.
func checkControllerKill(t *testing.T, ctls []*kraftdNode, brokers *BrokerSet, traffic *Traffic) int64 {
	before := WaitLeader(t, Addrs(ctls...), nil)
	old := nodeByID(ctls, before.LeaderID)
	rest := without(ctls, old)
	mark := traffic.Mark()
	old.Proc.Kill()
	after := WaitLeader(t, Addrs(rest...), func(s *QuorumStatus) error {
		if s.LeaderID == old.ID {
			return fmt.Errorf("still led by the killed node %d", old.ID)
		}
		if got := slices.Sorted(slices.Values(s.Observers)); !slices.Equal(got, brokers.IDs()) {
			return fmt.Errorf("observers of the new leader %v, want %v", got, brokers.IDs())
		}
		return nil
	})
	t.Logf("kraftd %d took over from %d at epoch %d", after.LeaderID, old.ID, after.LeaderEpoch)
	traffic.WaitProgress("after the active controller's SIGKILL", mark, 100)
	brokers.WaitUnfenced(t, brokers.IDs()...)

	// Restarted, the old leader rejoins as a follower and catches up.
	restarted := time.Now()
	old.Proc.Start()
	WaitLeader(t, Addrs(ctls...), voterCaughtUp(old.ID, restarted, after.HighWatermark))
	return before.HighWatermark
}

// checkControlledShutdown: SIGTERM of a broker that leads partitions. The
// broker asks to shut down in its heartbeats; the controller marks it in
// controlled shutdown, moves its leaderships away and only then lets it go,
// once every other broker has seen the moves. So when it has exited, the
// others' metadata shows it leading nothing, and the controller's log holds
// InControlledShutdown, then the leader moves, then its fencing. Restarted
// (a clean shutdown, so it keeps its ELR standing), it rejoins. No other
// broker may have been fenced since failoverAt.
func checkControlledShutdown(t *testing.T, ctls []*kraftdNode, brokers *BrokerSet, traffic *Traffic, failoverAt int64) {
	victimID := leaderOf(t, brokers, trafficTopic, 1)
	victim := brokers.Broker(victimID)
	mark := traffic.Mark()
	if err := victim.Proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Apache's JVM exits with 143 after its shutdown hooks ran on SIGTERM.
	if err := victim.Proc.Wait(ReadyTimeout); err != nil && !strings.Contains(err.Error(), "exit status 143") {
		t.Fatalf("broker %d after SIGTERM: %v", victimID, err)
	}
	m, err := brokers.Metadata(trafficTopic)
	if err != nil {
		t.Fatal(err)
	}
	for p, l := range m.Leaders[trafficTopic] {
		if l == victimID || slices.Contains(m.Isrs[trafficTopic][p], victimID) {
			t.Errorf("partition %d still has broker %d as leader or in its ISR after its controlled shutdown: leader %d, ISR %v",
				p, victimID, l, m.Isrs[trafficTopic][p])
		}
	}

	leader := nodeByID(ctls, WaitLeader(t, Addrs(ctls...), nil).LeaderID)
	var recs []LoggedRecord
	Eventually(t, ReadyTimeout, "the shutdown in the controller's log", nil, func() error {
		recs = DumpMetadataLog(t, leader.Dir)
		summary, err := controlledShutdownInLog(recs, victimID)
		if err == nil {
			t.Log(summary)
		}
		return err
	})
	// The only fencing since the controller's SIGKILL is this broker's own,
	// at the end of its controlled shutdown: the brokers heartbeat the new
	// controller.
	for _, r := range recs {
		if r.Offset >= failoverAt && isFencing(r) && int32(r.Int("brokerId")) != victimID {
			t.Errorf("broker %d was fenced at offset %d, after the controller failover at %d", r.Int("brokerId"), r.Offset, failoverAt)
		}
	}
	traffic.WaitProgress("after a controlled shutdown", mark, 100)

	restartBroker(t, brokers, victim, traffic)
}

// voterCaughtUp accepts a leader's view in which voter id has fetched since
// it was restarted and replicated the log up to offset. (A leader keeps the
// last state it saw of a voter that died, so the fetch time tells a fresh
// state from a stale one.)
func voterCaughtUp(id int32, restarted time.Time, offset int64) func(*QuorumStatus) error {
	return func(s *QuorumStatus) error {
		for _, v := range s.Resp.Topics[0].Partitions[0].CurrentVoters {
			if v.ReplicaID == id {
				if v.LastFetchTimestamp < restarted.UnixMilli() {
					return fmt.Errorf("voter %d has not fetched since its restart", id)
				}
				if v.LogEndOffset < offset {
					return fmt.Errorf("voter %d at %d, want %d", id, v.LogEndOffset, offset)
				}
				return nil
			}
		}
		return fmt.Errorf("voter %d not listed", id)
	}
}

func isFencing(r LoggedRecord) bool {
	return r.Type == "FenceBrokerRecord" || (r.Type == "BrokerRegistrationChangeRecord" && r.Int("fenced") == 1)
}

// controlledShutdownInLog checks the controller's records for the latest
// registration of broker id: it was marked InControlledShutdown while it
// led partitions, every one of them got another leader, and only then was
// it fenced. It sums up what it found.
func controlledShutdownInLog(recs []LoggedRecord, id int32) (string, error) {
	type tp struct {
		topic string
		p     int64
	}
	leaders := map[tp]int64{}
	registered, shutdownAt, fencedAt := int64(-1), int64(-1), int64(-1)
	var ledAtShutdown []tp
	lastMove := int64(-1)
	for _, r := range recs {
		if shutdownAt >= 0 && fencedAt < 0 && r.Type == "PartitionChangeRecord" && r.Int("leader") != -2 {
			lastMove = r.Offset
		}
		switch r.Type {
		case "PartitionRecord", "PartitionChangeRecord":
			if l := r.Int("leader"); r.Type == "PartitionRecord" || l != -2 {
				leaders[tp{r.String("topicId"), r.Int("partitionId")}] = l
			}
		case "RemoveTopicRecord":
			for k := range leaders {
				if k.topic == r.String("topicId") {
					delete(leaders, k)
				}
			}
		case "RegisterBrokerRecord":
			if int32(r.Int("brokerId")) == id {
				registered, shutdownAt, fencedAt, ledAtShutdown = r.Offset, -1, -1, nil
			}
		case "BrokerRegistrationChangeRecord":
			if int32(r.Int("brokerId")) != id || registered < 0 {
				continue
			}
			if r.Int("inControlledShutdown") == 1 && shutdownAt < 0 {
				shutdownAt = r.Offset
				for k, l := range leaders {
					if l == int64(id) {
						ledAtShutdown = append(ledAtShutdown, k)
					}
				}
			}
			if r.Int("fenced") == 1 && shutdownAt >= 0 && fencedAt < 0 {
				fencedAt = r.Offset
				for k, l := range leaders {
					if l == int64(id) {
						return "", fmt.Errorf("broker %d fenced at offset %d while still leading %v", id, r.Offset, k)
					}
				}
			}
		}
	}
	switch {
	case registered < 0:
		return "", fmt.Errorf("no registration of broker %d in the log", id)
	case shutdownAt < 0:
		return "", fmt.Errorf("no InControlledShutdown for broker %d after its registration at %d", id, registered)
	case len(ledAtShutdown) == 0:
		return "", fmt.Errorf("broker %d led nothing when its controlled shutdown began at %d", id, shutdownAt)
	case fencedAt < 0:
		return "", fmt.Errorf("broker %d not fenced after its controlled shutdown began at %d", id, shutdownAt)
	}
	return fmt.Sprintf("controller log: broker %d registered at %d, InControlledShutdown at %d leading %d partitions, last leader move at %d, fenced at %d",
		id, registered, shutdownAt, len(ledAtShutdown), lastMove, fencedAt), nil
}

// checkFeatures: kafka-features describes and upgrades straight through
// the controller; every registered broker and controller must support the
// new level.
func checkFeatures(t *testing.T, v string, ctls []*kraftdNode) {
	t.Helper()
	features, err := Features(t, v, "--bootstrap-controller", leaderAddr(t, ctls), "describe")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kafka-features describe:\n%s", features)
	if !strings.Contains(features, "Feature: metadata.version") {
		t.Errorf("kafka-features describe lacks metadata.version")
	}
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
	checkMetadataVersionUpgrade(t, v, ctls)
}

// checkMetadataVersionUpgrade runs kafka-features upgrade --metadata 4.4 on
// the running cluster, formatted at 4.1-IV1: 4.4 brokers support 4.4-IV2, so
// it is upgraded and the brokers still answer Metadata; 4.1 brokers do
// not, so it is refused and the level stays.
func checkMetadataVersionUpgrade(t *testing.T, v string, ctls []*kraftdNode) {
	t.Helper()
	if ReleaseLine(v) != "4.4" {
		// A 4.1 tool cannot name 4.4, so the level goes by number.
		out, err := Features(t, v, "--bootstrap-controller", leaderAddr(t, ctls), "upgrade", "--feature", "metadata.version=33")
		if err == nil || !regexp.MustCompile(`Broker \d+ only supports versions 7-27`).MatchString(out) {
			t.Errorf("upgrade --metadata 4.4 with %s brokers: %v\n%s", v, err, out)
		}
		return
	}
	out, err := Features(t, v, "--bootstrap-controller", leaderAddr(t, ctls), "upgrade", "--metadata", "4.4")
	if err != nil || !strings.Contains(out, "metadata.version was upgraded to 33.") {
		t.Fatalf("upgrade --metadata 4.4: %v\n%s", err, out)
	}
	features, err := Features(t, v, "--bootstrap-controller", leaderAddr(t, ctls), "describe")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`Feature: metadata.version\s+SupportedMinVersion: 3.3-IV3\s+SupportedMaxVersion: 4.4-IV2\s+FinalizedVersionLevel: 4.4-IV2\b`).MatchString(features) {
		t.Errorf("metadata.version not at 4.4-IV2 after the upgrade:\n%s", features)
	}
}

func leaderAddr(t *testing.T, nodes []*kraftdNode) string {
	s := WaitLeader(t, Addrs(nodes...), nil)
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

// restartBroker starts a stopped broker again and waits until it is
// unfenced, every ISR of the traffic topic holds all brokers again, and
// traffic goes on.
func restartBroker(t *testing.T, brokers *BrokerSet, victim *ApacheBroker, traffic *Traffic) {
	t.Helper()
	mark := traffic.Mark()
	victim.Start(t)
	brokers.WaitUnfenced(t, brokers.IDs()...)
	brokers.WaitPartitions(t, "ISRs grown back after restart", trafficTopic, fullIsr(brokers.IDs()))
	traffic.WaitProgress("after the broker's restart", mark, 100)
}
