package compat

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// checkStatusSecured runs `kraftd status --command-config` against a
// secured controller listener (SSL, SASL_SSL), with the same client
// properties Apache's kafka-metadata-quorum reads, and with a controller's
// own properties file: it must find the cluster, a leader and the voters. Without the properties it must find
// every controller down (exit 2) rather than hang or answer.
func checkStatusSecured(t *testing.T, protocol string, members []*MixedMember, clusterID, clientProps string) {
	t.Helper()
	var st struct {
		ClusterID     string            `json:"cluster_id"`
		LeaderID      int32             `json:"leader_id"`
		HighWatermark int64             `json:"high_watermark"`
		Voters        []json.RawMessage `json:"voters"`
		Controllers   []json.RawMessage `json:"controllers"`
		Probes        []struct {
			Reachable bool `json:"reachable"`
		} `json:"probes"`
	}
	// Healthy (exit 0) once every voter answers over the secured listener,
	// found from the one address given.
	Eventually(t, ReadyTimeout, "kraftd status over "+protocol, nil, func() error {
		out, code := kraftdStatus(t, "--bootstrap-controller", members[0].Addr(), "--command-config", clientProps, "--json")
		i := strings.Index(out, "{")
		if i < 0 || code != 0 {
			return fmt.Errorf("exit %d:\n%s", code, out)
		}
		if err := json.Unmarshal([]byte(out[i:]), &st); err != nil {
			return fmt.Errorf("%v:\n%s", err, out)
		}
		up := 0
		for _, p := range st.Probes {
			if p.Reachable {
				up++
			}
		}
		if st.ClusterID != clusterID || st.LeaderID < 0 || st.HighWatermark < 1 || len(st.Voters) != len(members) || len(st.Controllers) < 1 || up != len(members) {
			return fmt.Errorf("cluster %q leader %d high watermark %d, %d voters, %d controllers, %d answered; want cluster %q, a leader, %d voters:\n%s",
				st.ClusterID, st.LeaderID, st.HighWatermark, len(st.Voters), len(st.Controllers), up, clusterID, len(members), out)
		}
		return nil
	})
	// A controller's own file gives the listener's TLS and SASL too.
	Eventually(t, ReadyTimeout, "kraftd status --config over "+protocol, nil, func() error {
		out, code := kraftdStatus(t, "--config", members[0].ConfigFile())
		if want := fmt.Sprintf("%d of %d voters up", len(members), len(members)); code != 0 || !strings.Contains(out, want) {
			return fmt.Errorf("exit %d, want 0 and %q:\n%s", code, want, out)
		}
		return nil
	})
	// Controllers are those registered so far (DescribeCluster): soon
	// after start, not yet all of them.
	t.Logf("kraftd status --command-config over %s: leader %d, high watermark %d, %d controllers registered", protocol, st.LeaderID, st.HighWatermark, len(st.Controllers))

	plain := StartKraftd(t, "kraftd-status-plaintext", "status", "--bootstrap-controller", members[0].Addr(), "--timeout", "5s")
	err := plain.Wait(time.Minute)
	if err == nil || !strings.Contains(plain.Output(), "diagnosis: down: no majority reachable: 0 of") {
		t.Errorf("kraftd status over PLAINTEXT against the %s listener: %v\n%s", protocol, err, plain.Output())
	}
}
