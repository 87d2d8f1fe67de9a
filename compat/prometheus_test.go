package compat

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
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
// Strimzi's controller alerts beside the ones kraftd ships
// (deploy/prometheus), which promtool checks first.
func startQuorumPrometheus(t *testing.T, nodes []*metricsNode) *Prometheus {
	t.Helper()
	all := quorumRules + kraftdRuleGroups(t)
	rules := filepath.Join(t.TempDir(), "rules.yml")
	writeFile(t, rules, []byte(all))
	if out, err := exec.Command("promtool", "check", "rules", rules).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	var targets []PrometheusTarget
	for _, n := range nodes {
		targets = append(targets, PrometheusTarget{Addr: n.metricsAddr, Labels: map[string]string{
			"namespace": "kraftd-test", "kubernetes_pod_name": podName(n),
			"strimzi_io_cluster": "my-cluster", "strimzi_io_name": "my-cluster-kafka", "container": "kafka",
		}})
	}
	return StartPrometheus(t, targets, all)
}

// dashboardPanel is one panel of Strimzi's KRaft dashboard
// (strimzi-kraft.json) that reads a controller's own metrics: its title
// and its query as the dashboard writes it, with the dashboard's
// variables. The panels left out read the JVM (jvm_*), the kubelet or
// cAdvisor, none of which a kraftd process serves.
type dashboardPanel struct{ title, expr string }

var strimziKRaftPanels = []dashboardPanel{
	{"Open File Descriptors", `sum(process_open_fds{namespace="$kubernetes_namespace",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node",container="kafka"}) by (kubernetes_pod_name)`},
	{"Append Metadata Records Rate", `sum(kafka_server_raftmetrics_append_records_rate{namespace="$kubernetes_namespace",strimzi_io_cluster="$strimzi_cluster_name",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node"}) by (kubernetes_pod_name)`},
	{"Fetch Metadata Records Rate", `sum(kafka_server_raftmetrics_fetch_records_rate{namespace="$kubernetes_namespace",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node",strimzi_io_name="$strimzi_cluster_name-kafka"}) by (kubernetes_pod_name)`},
	{"Metadata Records Commit Latency", `sum(kafka_server_raftmetrics_commit_latency_avg{namespace="$kubernetes_namespace",strimzi_io_cluster="$strimzi_cluster_name",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node"}) by (kubernetes_pod_name)`},
	{"Current Raft State", `max(kafka_server_raftmetrics_current_state) by (kubernetes_pod_name, current_state)`},
	{"Current Quorum Leader", `sum(kafka_server_raftmetrics_current_leader{namespace="$kubernetes_namespace",strimzi_io_cluster="$strimzi_cluster_name",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node"}) by (kubernetes_pod_name)`},
	{"Current Voted Leader", `sum(kafka_server_raftmetrics_current_vote{namespace="$kubernetes_namespace",strimzi_io_cluster="$strimzi_cluster_name",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node"}) by (kubernetes_pod_name)`},
	{"Current Quorum Epoch", `sum(kafka_server_raftmetrics_current_epoch{namespace="$kubernetes_namespace",strimzi_io_cluster="$strimzi_cluster_name",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node"}) by (kubernetes_pod_name)`},
	{"Metadata Topic Incoming Bytes Rate", `sum(irate(kafka_server_raftchannelmetrics_incoming_byte_total{namespace="$kubernetes_namespace",strimzi_io_cluster="$strimzi_cluster_name",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node"}[5m])) by (kubernetes_pod_name)`},
	{"Metadata Topic Outgoing Bytes Rate", `sum(irate(kafka_server_raftchannelmetrics_outgoing_byte_total{namespace="$kubernetes_namespace",strimzi_io_cluster="$strimzi_cluster_name",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node"}[5m])) by (kubernetes_pod_name)`},
	{"Metadata Topic Requests Rate", `sum(irate(kafka_server_raftchannelmetrics_request_total{namespace="$kubernetes_namespace",strimzi_io_cluster="$strimzi_cluster_name",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node"}[5m])) by (kubernetes_pod_name)`},
	{"Metadata Topic Responses Rate", `sum(irate(kafka_server_raftchannelmetrics_response_total{namespace="$kubernetes_namespace",strimzi_io_cluster="$strimzi_cluster_name",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node"}[5m])) by (kubernetes_pod_name)`},
	{"High Watermark", `sum(kafka_server_raftmetrics_high_watermark{namespace="$kubernetes_namespace",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node",strimzi_io_name="$strimzi_cluster_name-kafka"}) by (kubernetes_pod_name)`},
	{"Log End Offset", `sum(kafka_server_raftmetrics_log_end_offset{namespace="$kubernetes_namespace",kubernetes_pod_name=~"$strimzi_cluster_name-$kraft_node",strimzi_io_name="$strimzi_cluster_name-kafka"}) by (kubernetes_pod_name)`},
}

// dashboardVariables are the dashboard's variables set to this cluster.
var dashboardVariables = strings.NewReplacer("$kubernetes_namespace", "kraftd-test", "$strimzi_cluster_name", "my-cluster", "$kraft_node", "controller-.*")

// checkDashboardQueries waits until every dashboard panel's query returns
// a series for each of the three pods, and prints the answers as the
// Markdown table docs/metrics.md keeps (panel, query, result per pod).
func checkDashboardQueries(t *testing.T, prom *Prometheus, nodes []*metricsNode) {
	t.Helper()
	deadline := time.Now().Add(alertTimeout)
	var table strings.Builder
	table.WriteString("| panel | query | result |\n|---|---|---|\n")
	for _, panel := range strimziKRaftPanels {
		expr := dashboardVariables.Replace(panel.expr)
		for {
			res, err := prom.Query(expr)
			pods := map[string]string{}
			for _, r := range res {
				pods[r.Metric["kubernetes_pod_name"]] += fmt.Sprintf("%s%v", stateLabel(r), r.Value[1])
			}
			if err == nil && len(pods) == len(nodes) {
				fmt.Fprintf(&table, "| %s | `%s` | %s |\n", panel.title, strings.ReplaceAll(expr, "|", "\\|"), podResults(pods))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Prometheus query %s: %v, %v; want a series per pod", expr, pods, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	t.Logf("Strimzi KRaft dashboard panels on this quorum:\n%s", table.String())
}

// podResults is each pod's answer, in pod order, for the table.
func podResults(pods map[string]string) string {
	var names []string
	for p := range pods {
		names = append(names, p)
	}
	sort.Strings(names)
	var out []string
	for _, p := range names {
		out = append(out, strings.TrimPrefix(p, "my-cluster-")+": "+pods[p])
	}
	return strings.Join(out, ", ")
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
	waitReady(t, nodes, ReadyTimeout)
	waitAlert(t, prom, "AbnormalControllerState", "", alertTimeout)
	leader := readyLeaderOf(t, nodes)
	var follower *metricsNode
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	leader.Proc.Kill()
	if err := follower.Proc.Pause(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// The recording checkRecordedAlert reads starts after the kill, at a
	// whole second: the seconds before may still show the outage of the
	// leader stopped before (checkLifecycleLog), which is not this one.
	recordFrom := killed.Truncate(time.Second).Add(time.Second)
	waitAlert(t, prom, "AbnormalControllerState", "firing", alertTimeout)
	t.Logf("AbnormalControllerState fired %v after leader %d was killed and follower %d stopped", time.Since(killed).Round(time.Millisecond), leader.ID, follower.ID)
	// Hold the outage until Prometheus's recording, read at 1 s steps as
	// checkRecordedAlert reads it, shows the rule's 2 s without an active
	// controller: the live alert can fire on samples 2 s apart, which 1 s
	// steps may show as only two (CI saw sums [1 1 0 1 1 0 0 1 1] so), and
	// a loaded machine delays and misses scrapes.
	waitRecording(t, prom, recordFrom, "the outage recorded for the rule's 2 s", func(r *activeRecording) error {
		if r.fire < 0 {
			return fmt.Errorf("no 2 s without one active controller yet: sums %v", r.sum)
		}
		return nil
	})
	follower.Proc.Resume()
	leader.start(t)
	back := time.Now()
	waitAlert(t, prom, "AbnormalControllerState", "", alertTimeout)
	t.Logf("AbnormalControllerState cleared %v after both came back", time.Since(back).Round(time.Millisecond))
	// The alert clears with two of three: the checks after this one need
	// all three following a leader again.
	waitReady(t, nodes, ReadyTimeout)
	if state, err := prom.AlertState("OfflinePartitions"); err != nil || state != "" {
		t.Errorf("OfflinePartitions is %q (%v) on a quorum without partitions", state, err)
	}
	// The recording ends with one active controller again: the step that
	// checkRecordedAlert expects quiet.
	rec := waitRecording(t, prom, recordFrom, "the recovery recorded", func(r *activeRecording) error {
		if last := r.steps - 1; r.fire < 0 || !r.present[last] || r.sum[last] != 1 {
			return fmt.Errorf("the recording does not end with one active controller: sums %v", r.sum)
		}
		return nil
	})
	checkRecordedAlert(t, rec)
}

// alertTimeout bounds a wait for an alert, or for what Prometheus
// scraped, to reach a state: generous, for a loaded machine (scrapes and
// rule evaluations late or missed, JVMs slow to start and stop); the
// waits poll for the state and end as soon as it holds.
const alertTimeout = 5 * time.Minute

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
