package compat

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// quorumRules are the controller alerts Strimzi ships for Apache's
// controllers (its prometheus-kafka-rules.yaml), restated: more or fewer
// than one active controller, and any partition without a leader. The
// windows are seconds so that the test can see them fire.
const quorumRules = `groups:
  - name: controller
    rules:
      - alert: AbnormalControllerState
        expr: sum(kafka_controller_kafkacontroller_activecontrollercount) by (namespace) != 1
        for: 2s
      - alert: OfflinePartitions
        expr: sum(kafka_controller_kafkacontroller_offlinepartitionscount) by (namespace, kubernetes_pod_name) > 0
        for: 2s
`

// podName is the label a Strimzi pod's series carry, for the node.
func podName(n *metricsNode) string { return fmt.Sprintf("my-cluster-controller-%d", n.ID) }

// startQuorumPrometheus starts a real Prometheus scraping every node's
// metrics listener with the labels Strimzi's pods give their series, and
// the controller alerts, which promtool checks first.
func startQuorumPrometheus(t *testing.T, nodes []*metricsNode) *Prometheus {
	t.Helper()
	rules := filepath.Join(t.TempDir(), "rules.yml")
	writeFile(t, rules, []byte(quorumRules))
	if out, err := exec.Command("promtool", "check", "rules", rules).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	var targets []PrometheusTarget
	for _, n := range nodes {
		targets = append(targets, PrometheusTarget{Addr: n.metricsAddr, Labels: map[string]string{
			"namespace": "kraftd-test", "kubernetes_pod_name": podName(n),
			"strimzi_io_cluster": "my-cluster", "strimzi_io_name": "my-cluster-kafka",
		}})
	}
	return StartPrometheus(t, targets, quorumRules)
}

// dashboardQueries are the queries of the panels of Strimzi's KRaft
// dashboard (strimzi-kraft.json) that read controller metrics: a sum (or
// max, for the state) per pod of a gauge, and a per-pod irate of the raft
// channel's counters, with the dashboard's variables set to this cluster.
func dashboardQueries() []string {
	const sel = `{namespace="kraftd-test",strimzi_io_cluster="my-cluster",kubernetes_pod_name=~"my-cluster-controller-.*"}`
	q := []string{
		`max(kafka_server_raftmetrics_current_state) by (kubernetes_pod_name, current_state)`,
		`sum(process_open_fds` + sel + `) by (kubernetes_pod_name)`,
	}
	for _, g := range []string{"append_records_rate", "fetch_records_rate", "commit_latency_avg", "current_leader",
		"current_vote", "current_epoch", "high_watermark", "log_end_offset"} {
		q = append(q, "sum(kafka_server_raftmetrics_"+g+sel+") by (kubernetes_pod_name)")
	}
	for _, c := range []string{"incoming_byte_total", "outgoing_byte_total", "request_total", "response_total"} {
		q = append(q, "sum(irate(kafka_server_raftchannelmetrics_"+c+sel+"[5m])) by (kubernetes_pod_name)")
	}
	return q
}

// checkDashboardQueries waits until every dashboard query returns a series
// for each of the three pods, and logs the answers.
func checkDashboardQueries(t *testing.T, prom *Prometheus, nodes []*metricsNode) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, expr := range dashboardQueries() {
		for {
			res, err := prom.Query(expr)
			pods := map[string]string{}
			for _, r := range res {
				pods[r.Metric["kubernetes_pod_name"]] = fmt.Sprintf("%s%v", stateLabel(r), r.Value[1])
			}
			if err == nil && len(pods) == len(nodes) {
				t.Logf("%s -> %v", expr, pods)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Prometheus query %s: %v, %v; want a series per pod", expr, pods, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

func stateLabel(r PromSample) string {
	if s := r.Metric["current_state"]; s != "" {
		return s + "="
	}
	return ""
}

// checkControllerAlert SIGKILLs the leader and stops a follower, so that no
// successor can be elected: the remaining controller reports no active
// controller and AbnormalControllerState fires; once both are back, a
// leader is elected and the alert clears. OfflinePartitions stays quiet:
// this quorum has no partitions (an offline one needs brokers).
func checkControllerAlert(t *testing.T, prom *Prometheus, nodes []*metricsNode, stopped *metricsNode) {
	t.Helper()
	stopped.start(t)
	waitReady(t, nodes, 60*time.Second)
	waitAlert(t, prom, "AbnormalControllerState", "", 60*time.Second)
	leader := readyLeaderOf(t, nodes)
	var follower *metricsNode
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	recordFrom := time.Now().Add(-3 * time.Second)
	leader.Proc.Kill()
	if err := follower.Proc.Pause(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitAlert(t, prom, "AbnormalControllerState", "firing", 60*time.Second)
	t.Logf("AbnormalControllerState fired %v after leader %d was killed and follower %d stopped", time.Since(killed).Round(time.Millisecond), leader.ID, follower.ID)
	follower.Proc.Resume()
	leader.start(t)
	back := time.Now()
	waitAlert(t, prom, "AbnormalControllerState", "", 60*time.Second)
	t.Logf("AbnormalControllerState cleared %v after both came back", time.Since(back).Round(time.Millisecond))
	if state, err := prom.AlertState("OfflinePartitions"); err != nil || state != "" {
		t.Errorf("OfflinePartitions is %q (%v) on a quorum without partitions", state, err)
	}
	res, err := prom.Query(`sum(kafka_controller_kafkacontroller_activecontrollercount) by (namespace)`)
	if err != nil || len(res) != 1 || fmt.Sprint(res[0].Value[1]) != "1" {
		t.Errorf("sum(activecontrollercount) after recovery: %v %v", res, err)
	}
	// Let every node's recovered series be scraped twice more.
	time.Sleep(2500 * time.Millisecond)
	checkRecordedAlert(t, prom, recordFrom, time.Now().Add(-time.Second))
}

func waitAlert(t *testing.T, prom *Prometheus, name, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		state, err := prom.AlertState(name)
		if err == nil && state == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("alert %s is %q (%v) after %v, want %q", name, state, err, within, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
