package compat

import (
	"fmt"
	"testing"
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
	if _, err := fleet.WaitUnfenced(ReadyTimeout); err != nil {
		t.Fatal(err)
	}
	return fleet
}

// checkBrokerMetrics waits until every node counts the two brokers active
// and the active controller, whichever node that is by then (a loaded
// machine's quorum can change leaders), reports each one's heartbeat age.
func checkBrokerMetrics(t *testing.T, nodes []*metricsNode) {
	t.Helper()
	Eventually(t, ReadyTimeout, "two active brokers on every node, and their heartbeat ages on the active controller", nil, func() error {
		actives := 0
		for _, n := range nodes {
			fams, _ := n.scrape(t, false)
			active := familyValue(fams["kafka_controller_kafkacontroller_activebrokercount"])
			ages := fams["kafka_controller_kafkacontroller_timesincelastheartbeatreceivedms"].GetMetric()
			if active != 2 {
				return fmt.Errorf("node %d: activebrokercount %v, want 2", n.ID, active)
			}
			if familyValue(fams["kafka_controller_kafkacontroller_activecontrollercount"]) == 1 {
				actives++
				if len(ages) != 2 {
					return fmt.Errorf("node %d, the active controller: %d heartbeat ages, want 2", n.ID, len(ages))
				}
			}
		}
		if actives != 1 {
			return fmt.Errorf("%d active controllers, want 1", actives)
		}
		return nil
	})
}
