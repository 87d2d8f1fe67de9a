package compat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// checkStatusSecured runs `kraftd status --command-config` against a
// secured controller listener (SSL, SASL_SSL), with the same client
// properties Apache's kafka-metadata-quorum reads: it must find the
// cluster, a leader and the voters. Without the properties it must find
// every controller down (exit 2) rather than hang or answer.
func checkStatusSecured(t *testing.T, protocol string, members []*MixedMember, clusterID, clientProps string) {
	t.Helper()
	p := StartKraftd(t, "kraftd-status-"+strings.ToLower(protocol), "status", "--bootstrap-controller", members[0].Addr(),
		"--command-config", clientProps, "--json")
	if err := p.Wait(time.Minute); err != nil {
		t.Fatalf("kraftd status over %s: %v\n%s", protocol, err, p.Output())
	}
	var st struct {
		ClusterID     string            `json:"cluster_id"`
		LeaderID      int32             `json:"leader_id"`
		HighWatermark int64             `json:"high_watermark"`
		Voters        []json.RawMessage `json:"voters"`
		Controllers   []json.RawMessage `json:"controllers"`
	}
	out := p.Output()
	i := strings.Index(out, "{")
	if i < 0 {
		t.Fatalf("kraftd status --json over %s printed no JSON:\n%s", protocol, out)
	}
	if err := json.Unmarshal([]byte(out[i:]), &st); err != nil {
		t.Fatalf("kraftd status --json over %s: %v\n%s", protocol, err, out)
	}
	if st.ClusterID != clusterID || st.LeaderID < 0 || st.HighWatermark < 1 || len(st.Voters) != len(members) || len(st.Controllers) < 1 {
		t.Errorf("kraftd status over %s: cluster %q leader %d high watermark %d, %d voters, %d controllers; want cluster %q, a leader, %d voters:\n%s",
			protocol, st.ClusterID, st.LeaderID, st.HighWatermark, len(st.Voters), len(st.Controllers), clusterID, len(members), out)
	}
	// Controllers are those registered so far (DescribeCluster): soon
	// after start, not yet all of them.
	t.Logf("kraftd status --command-config over %s: leader %d, high watermark %d, %d controllers registered", protocol, st.LeaderID, st.HighWatermark, len(st.Controllers))

	plain := StartKraftd(t, "kraftd-status-plaintext", "status", "--bootstrap-controller", members[0].Addr(), "--timeout", "5s")
	err := plain.Wait(time.Minute)
	if err == nil || !strings.Contains(plain.Output(), "diagnosis: down: no majority reachable: 0 of") {
		t.Errorf("kraftd status over PLAINTEXT against the %s listener: %v\n%s", protocol, err, plain.Output())
	}
}
