package compat

import (
	"testing"
	"time"
)

// startBrokerFleet registers two simulated brokers (Go clients speaking
// the broker's side of the protocol) with the quorum and waits until they
// are unfenced; the test stops them.
func startBrokerFleet(t *testing.T, nodes []*metricsNode) *SimFleet {
	t.Helper()
	voters := map[int32]string{}
	for _, n := range nodes {
		voters[n.ID] = n.Addr()
	}
	fleet, err := StartSimFleet(clusterIDOf(t, nodes[0].kraftdNode), voters, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Stop)
	if _, err := fleet.WaitUnfenced(time.Minute); err != nil {
		t.Fatal(err)
	}
	return fleet
}

// checkBrokerMetrics waits until every node counts the two brokers active
// and the leader reports each one's heartbeat age.
func checkBrokerMetrics(t *testing.T, nodes []*metricsNode, leader *metricsNode) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, n := range nodes {
		for {
			fams, _ := n.scrape(t, false)
			active := familyValue(fams["kafka_controller_kafkacontroller_activebrokercount"])
			ages := fams["kafka_controller_kafkacontroller_timesincelastheartbeatreceivedms"].GetMetric()
			if active == 2 && (n != leader || len(ages) == 2) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: activebrokercount %v, %d heartbeat ages, want 2 and (on the leader) 2", n.ID, active, len(ages))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
