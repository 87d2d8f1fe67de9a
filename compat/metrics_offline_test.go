package compat

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offlineTopic has one partition on each of the two Apache brokers of the
// offline-partitions check, one replica each.
const offlineTopic = "offline-alert"

// offlineBrokerIDs are apart from the controllers' and the simulated
// brokers' ids.
var offlineBrokerIDs = []int{201, 202}

// createAssignedTopic creates topic through a broker (which forwards it to
// the active controller) with replicas placed as assignment says, one
// entry per partition.
func createAssignedTopic(t *testing.T, brokers *BrokerSet, topic string, assignment [][]int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	req.TimeoutMillis = int32(ReadyTimeout.Milliseconds())
	ctx, cancel := context.WithTimeout(context.Background(), alertTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && len(resp.Topics) == 1 {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// checkOfflinePartitionsAlert starts two Apache brokers on the quorum and
// a topic with one single-replica partition on each, and takes each
// partition offline in turn, watching Strimzi's OfflinePartitions alert in
// the real Prometheus scraping the controllers:
//   - the first broker is SIGKILLed: once the active controller fences it
//     (its session times out) partition 0 has no leader, every controller
//     counts one offline partition, and the alert fires. The broker comes
//     back after an unclean shutdown, which under eligible leader replicas
//     (KIP-966) takes it out of the ELR, as Apache's controller does: the
//     partition stays offline until an unclean election (ElectLeaders),
//     which clears the alert and counts one UncleanLeaderElectionsPerSec;
//   - the second broker stops cleanly (controlled shutdown): partition 1
//     cannot move, goes offline with its replica in the ELR, and the alert
//     fires; the broker's restart elects it from the ELR, which clears the
//     alert and counts one ElectionFromEligibleLeaderReplicasPerSec.
func checkOfflinePartitionsAlert(t *testing.T, prom *Prometheus, nodes []*metricsNode) {
	t.Helper()
	ReserveJVMs(t, 2)
	var voters []string
	for _, n := range nodes {
		voters = append(voters, fmt.Sprintf("%d@%s", n.ID, n.Addr()))
	}
	brokers := startOfflineBrokers(t, strings.Join(voters, ","), clusterIDOf(t, nodes[0].kraftdNode))
	killed, stopped := brokers.Brokers[0], brokers.Brokers[1]
	createAssignedTopic(t, brokers, offlineTopic, [][]int32{{int32(killed.NodeID)}, {int32(stopped.NodeID)}})
	waitOfflineTopicLed(t, brokers)
	waitAlert(t, prom, "OfflinePartitions", "", alertTimeout)

	killed.Proc.Kill()
	at := time.Now()
	waitAlert(t, prom, "OfflinePartitions", "firing", alertTimeout)
	t.Logf("OfflinePartitions fired %v after broker %d (the only replica of %s-0) was SIGKILLed", time.Since(at).Round(time.Millisecond), killed.NodeID, offlineTopic)
	checkOfflineCount(t, prom, nodes)
	killed.Start(t)
	waitUnfenced(t, brokers, killed.Proc)
	// Back and unfenced, the broker's partition stays without a leader: the
	// brokers' metadata and every controller's own count say so now, and
	// the alert (which a missed scrape may have reset to pending) fires.
	checkStillOffline(t, brokers, nodes, 0)
	waitAlert(t, prom, "OfflinePartitions", "firing", alertTimeout)
	electUnclean(t, brokers, offlineTopic, 0)
	at = time.Now()
	waitAlert(t, prom, "OfflinePartitions", "", alertTimeout)
	t.Logf("OfflinePartitions cleared %v after the unclean election of broker %d", time.Since(at).Round(time.Millisecond), killed.NodeID)
	waitOfflineTopicLed(t, brokers)
	waitControllerCounter(t, nodes, "kafka_controller_controllerstats_uncleanleaderelections_total", 1)

	took := stopCleanly(t, stopped)
	at = time.Now()
	waitAlert(t, prom, "OfflinePartitions", "firing", alertTimeout)
	t.Logf("OfflinePartitions firing %v after broker %d (the only replica of %s-1) finished its clean stop, which took %v",
		time.Since(at).Round(time.Millisecond), stopped.NodeID, offlineTopic, took.Round(time.Millisecond))
	checkOfflineCount(t, prom, nodes)
	stopped.Start(t)
	at = time.Now()
	waitUnfenced(t, brokers, stopped.Proc)
	t.Logf("broker %d unfenced %v after its restart", stopped.NodeID, time.Since(at).Round(time.Millisecond))
	waitAlert(t, prom, "OfflinePartitions", "", alertTimeout)
	t.Logf("OfflinePartitions cleared %v after broker %d was restarted and elected from the ELR", time.Since(at).Round(time.Millisecond), stopped.NodeID)
	waitOfflineTopicLed(t, brokers)
	waitControllerCounter(t, nodes, "kafka_controller_controllerstats_electionfromeligibleleaderreplicas_total", 1)
	waitAlert(t, prom, "AbnormalControllerState", "", alertTimeout)
}

func waitOfflineTopicLed(t *testing.T, brokers *BrokerSet) {
	t.Helper()
	brokers.WaitPartitions(t, "both partitions led", offlineTopic, func(p, leader int32, _ []int32) error {
		if leader < 0 {
			return fmt.Errorf("no leader")
		}
		return nil
	})
}

// checkOfflineCount: every controller counts the one offline partition in
// its own image, as Prometheus sees it. It waits for it: the alert fires
// on the first pod's series, and another pod's may be a scrape behind, or
// missing for a scrape that failed on a loaded machine.
func checkOfflineCount(t *testing.T, prom *Prometheus, nodes []*metricsNode) {
	t.Helper()
	Eventually(t, alertTimeout, "every controller counts one offline partition in Prometheus", nil, func() error {
		res, err := prom.Query(`sum(kafka_controller_kafkacontroller_offlinepartitionscount) by (kubernetes_pod_name)`)
		if err != nil {
			return err
		}
		if len(res) != len(nodes) {
			return fmt.Errorf("offlinepartitionscount by pod: %v, want one series per controller", res)
		}
		for _, r := range res {
			if fmt.Sprint(r.Value[1]) != "1" {
				return fmt.Errorf("%s counts %v offline partitions, want 1", r.Metric["kubernetes_pod_name"], r.Value[1])
			}
		}
		return nil
	})
}

// checkStillOffline: partition p of the offline topic has no leader in
// the brokers' metadata, and every controller's /metrics counts one
// offline partition: a state that must hold, read at once.
func checkStillOffline(t *testing.T, brokers *BrokerSet, nodes []*metricsNode, p int32) {
	t.Helper()
	var m *BrokerMetadata
	Eventually(t, alertTimeout, "a broker's metadata", nil, func() (err error) {
		m, err = brokers.Metadata(offlineTopic)
		return err
	})
	if leader, ok := m.Leaders[offlineTopic][p]; !ok || leader >= 0 {
		t.Errorf("%s-%d: leader %d (listed: %v), want none until an unclean election", offlineTopic, p, leader, ok)
	}
	for _, n := range nodes {
		fams, _ := n.scrape(t, false)
		if got := familyValue(fams["kafka_controller_kafkacontroller_offlinepartitionscount"]); got != 1 {
			t.Errorf("node %d counts %v offline partitions, want 1", n.ID, got)
		}
	}
}

// startOfflineBrokers is StartBrokers for the two brokers of this check,
// waiting for them as waitUnfenced does.
func startOfflineBrokers(t *testing.T, voters, clusterID string) *BrokerSet {
	t.Helper()
	s := &BrokerSet{Version: Versions[0]}
	for _, id := range offlineBrokerIDs {
		b := NewApacheBroker(t, s.Version, id, voters, nil)
		b.Format(t, clusterID)
		s.Brokers = append(s.Brokers, b)
	}
	for _, b := range s.Brokers {
		b.Start(t)
	}
	waitUnfenced(t, s, nil)
	return s
}

// waitUnfenced waits until a running broker's metadata lists every broker
// of brokers as unfenced, failing at once if started (a broker just
// started again) exits. A JVM's start on a loaded machine took close to
// two minutes, and longer (1m55s to be unfenced after a restart at load 35
// to 60 beside stress-ng; over two minutes for two at once at load 35),
// so the bound is alertTimeout, not BrokerSet.WaitUnfenced's ReadyTimeout.
func waitUnfenced(t *testing.T, brokers *BrokerSet, started *Process) {
	t.Helper()
	brokers.waitUnfencedWithin(t, alertTimeout, started, brokers.IDs()...)
}

// stopCleanly stops a broker as an operator does, with SIGTERM, and waits
// for its JVM to exit on its own (143, after its shutdown hooks ran),
// however long its controlled shutdown and the closing of its logs take
// on a loaded machine; it returns how long that took. Proc.Stop would
// send SIGKILL after StopTimeout: a broker killed before it has closed
// its logs leaves no clean-shutdown marker, registers again as shut down
// uncleanly, and is taken out of the ELR, so its partition stays offline.
func stopCleanly(t *testing.T, b *ApacheBroker) time.Duration {
	t.Helper()
	start := time.Now()
	if err := b.Proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := b.Proc.Wait(alertTimeout); err != nil && !strings.Contains(err.Error(), "exit status 143") {
		t.Fatalf("broker %d after SIGTERM: %v", b.NodeID, err)
	}
	return time.Since(start)
}

// waitControllerCounter waits until every controller's /metrics shows the
// counter at want.
func waitControllerCounter(t *testing.T, nodes []*metricsNode, name string, want float64) {
	t.Helper()
	for _, n := range nodes {
		Eventually(t, ReadyTimeout, fmt.Sprintf("node %d: %s = %v", n.ID, name, want), nil, func() error {
			fams, _ := n.scrape(t, false)
			if got := familyValue(fams[name]); got != want {
				return fmt.Errorf("%s is %v", name, got)
			}
			return nil
		})
	}
}

// electUnclean asks for an unclean election of one partition (as
// kafka-leader-election --election-type unclean does), through a broker.
func electUnclean(t *testing.T, brokers *BrokerSet, topic string, partition int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType, req.TimeoutMillis = 1, int32(ReadyTimeout.Milliseconds())
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = []kmsg.ElectLeadersRequestTopic{rt}
	ctx, cancel := context.WithTimeout(context.Background(), alertTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				if err == nil {
					err = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	}
	if err != nil {
		t.Fatalf("unclean election of %s-%d: %v", topic, partition, err)
	}
}
