package compat

import (
	"context"
	"fmt"
	"strings"
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
	req.TimeoutMillis = 30_000
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	brokers := StartBrokers(t, Versions[0], strings.Join(voters, ","), clusterIDOf(t, nodes[0].kraftdNode), offlineBrokerIDs, nil)
	killed, stopped := brokers.Brokers[0], brokers.Brokers[1]
	createAssignedTopic(t, brokers, offlineTopic, [][]int32{{int32(killed.NodeID)}, {int32(stopped.NodeID)}})
	waitOfflineTopicLed(t, brokers)
	waitAlert(t, prom, "OfflinePartitions", "", 60*time.Second)

	killed.Proc.Kill()
	at := time.Now()
	waitAlert(t, prom, "OfflinePartitions", "firing", 2*time.Minute)
	t.Logf("OfflinePartitions fired %v after broker %d (the only replica of %s-0) was SIGKILLed", time.Since(at).Round(time.Millisecond), killed.NodeID, offlineTopic)
	checkOfflineCount(t, prom, nodes)
	killed.Start(t)
	brokers.WaitUnfenced(t, brokers.IDs()...)
	if state, err := prom.AlertState("OfflinePartitions"); err != nil || state != "firing" {
		t.Errorf("OfflinePartitions is %q (%v) once broker %d, shut down uncleanly, is back: want firing until an unclean election", state, err, killed.NodeID)
	}
	electUnclean(t, brokers, offlineTopic, 0)
	at = time.Now()
	waitAlert(t, prom, "OfflinePartitions", "", 2*time.Minute)
	t.Logf("OfflinePartitions cleared %v after the unclean election of broker %d", time.Since(at).Round(time.Millisecond), killed.NodeID)
	waitOfflineTopicLed(t, brokers)
	waitControllerCounter(t, nodes, "kafka_controller_controllerstats_uncleanleaderelections_total", 1)

	stopped.Proc.Stop()
	at = time.Now()
	waitAlert(t, prom, "OfflinePartitions", "firing", 2*time.Minute)
	t.Logf("OfflinePartitions firing %v after broker %d (the only replica of %s-1) finished its clean stop", time.Since(at).Round(time.Millisecond), stopped.NodeID, offlineTopic)
	checkOfflineCount(t, prom, nodes)
	stopped.Start(t)
	at = time.Now()
	waitAlert(t, prom, "OfflinePartitions", "", 2*time.Minute)
	t.Logf("OfflinePartitions cleared %v after broker %d was restarted and elected from the ELR", time.Since(at).Round(time.Millisecond), stopped.NodeID)
	waitOfflineTopicLed(t, brokers)
	waitControllerCounter(t, nodes, "kafka_controller_controllerstats_electionfromeligibleleaderreplicas_total", 1)
	if state, err := prom.AlertState("AbnormalControllerState"); err != nil || state != "" {
		t.Errorf("AbnormalControllerState is %q (%v) while one controller is active", state, err)
	}
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
// its own image.
func checkOfflineCount(t *testing.T, prom *Prometheus, nodes []*metricsNode) {
	t.Helper()
	res, err := prom.Query(`sum(kafka_controller_kafkacontroller_offlinepartitionscount) by (kubernetes_pod_name)`)
	if err != nil || len(res) != len(nodes) {
		t.Fatalf("offlinepartitionscount by pod: %v %v", res, err)
	}
	for _, r := range res {
		if fmt.Sprint(r.Value[1]) != "1" {
			t.Errorf("%s counts %v offline partitions, want 1", r.Metric["kubernetes_pod_name"], r.Value[1])
		}
	}
}

// waitControllerCounter waits until every controller's /metrics shows the
// counter at want.
func waitControllerCounter(t *testing.T, nodes []*metricsNode, name string, want float64) {
	t.Helper()
	for _, n := range nodes {
		Eventually(t, time.Minute, fmt.Sprintf("node %d: %s = %v", n.ID, name, want), nil, func() error {
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
	req.ElectionType, req.TimeoutMillis = 1, 30_000
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = []kmsg.ElectLeadersRequestTopic{rt}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
