package compat

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// strimziKRaftNames are the series Strimzi's KRaft dashboard
// (grafana-dashboards/strimzi-kraft.json) and its controller alerts
// (prometheus-kafka-rules.yaml: AbnormalControllerState,
// OfflinePartitions) query, named as its JMX-exporter rules name Apache's
// metrics; process_open_fds is the one process panel a Go process has.
var strimziKRaftNames = []string{
	"kafka_server_raftmetrics_current_state",
	"kafka_server_raftmetrics_current_leader",
	"kafka_server_raftmetrics_current_vote",
	"kafka_server_raftmetrics_current_epoch",
	"kafka_server_raftmetrics_high_watermark",
	"kafka_server_raftmetrics_log_end_offset",
	"kafka_server_raftmetrics_commit_latency_avg",
	"kafka_server_raftmetrics_append_records_rate",
	"kafka_server_raftmetrics_fetch_records_rate",
	"kafka_server_raftchannelmetrics_incoming_byte_total",
	"kafka_server_raftchannelmetrics_outgoing_byte_total",
	"kafka_server_raftchannelmetrics_request_total",
	"kafka_server_raftchannelmetrics_response_total",
	"kafka_controller_kafkacontroller_activecontrollercount",
	"kafka_controller_kafkacontroller_offlinepartitionscount",
	"process_open_fds",
}

// apacheControllerNames are the rest of the names Apache's controller
// exposes through Strimzi's rules that kraftd serves too (KafkaRaftMetrics,
// QuorumControllerMetrics, ControllerMetadataMetrics, MetadataLoader).
var apacheControllerNames = []string{
	"kafka_server_raftmetrics_commit_latency_max_total",
	"kafka_server_raftmetrics_election_latency_avg",
	"kafka_server_raftmetrics_election_latency_max_total",
	"kafka_server_raftmetrics_log_end_epoch",
	"kafka_server_raftmetrics_number_of_voters",
	"kafka_server_raftmetrics_number_unknown_voter_connections",
	"kafka_server_raftmetrics_poll_idle_ratio_avg",
	"kafka_controller_kafkacontroller_newactivecontrollerscount",
	"kafka_controller_kafkacontroller_lastappliedrecordoffset",
	"kafka_controller_kafkacontroller_lastcommittedrecordoffset",
	"kafka_controller_kafkacontroller_lastappliedrecordtimestamp",
	"kafka_controller_kafkacontroller_lastappliedrecordlagms",
	"kafka_controller_kafkacontroller_activebrokercount",
	"kafka_controller_kafkacontroller_fencedbrokercount",
	"kafka_controller_kafkacontroller_controlledshutdownbrokercount",
	"kafka_controller_kafkacontroller_globaltopiccount",
	"kafka_controller_kafkacontroller_globalpartitioncount",
	"kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
	"kafka_controller_kafkacontroller_metadataerrorcount",
	"kafka_controller_kafkacontroller_timedoutbrokerheartbeatcount",
	"kafka_server_metadataloader_currentmetadataversion",
	"kafka_server_metadataloader_currentcontrollerid",
	"kafka_server_metadataloader_handleloadsnapshotcount",
	"kafka_server_snapshotemitter_latestsnapshotgeneratedbytes",
	"kafka_server_snapshotemitter_latestsnapshotgeneratedagems",
	"kafka_server_metadataloader_finalizedlevel",
	"kafka_controller_kafkacontroller_ignoredstaticvoters",
	"kafka_controller_controllerstats_uncleanleaderelections_total",
	"kafka_controller_controllerstats_electionfromeligibleleaderreplicas_total",
}

// leaderOnlyNames exist on the leader alone, as in Apache (addLeaderMetrics).
var leaderOnlyNames = []string{
	"kafka_server_raftmetrics_number_of_observers",
	"kafka_server_raftmetrics_uncommitted_voter_change",
}

// kraftdHistograms are kraftd's own, with real buckets.
var kraftdHistograms = []string{
	"kraftd_raft_commit_latency_seconds",
	"kraftd_log_fsync_duration_seconds",
	"kraftd_raft_election_duration_seconds",
	"kraftd_request_duration_seconds",
}

type metricsNode struct {
	*kraftdNode
	metricsAddr string
}

// readiness is the part of /readyz's body the test reads.
type readiness struct {
	Ready  bool   `json:"ready"`
	Reason string `json:"reason"`
	Role   string `json:"role"`
	Epoch  int32  `json:"epoch"`
}

func (n *metricsNode) readyz() (readiness, int, error) {
	var r readiness
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + n.metricsAddr + "/readyz")
	if err != nil {
		return r, 0, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&r)
	return r, resp.StatusCode, err
}

// scrape reads /metrics in the Prometheus text format, or in OpenMetrics.
func (n *metricsNode) scrape(t *testing.T, openMetrics bool) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+n.metricsAddr+"/metrics", nil)
	if openMetrics {
		req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0; charset=utf-8")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape node %d: %v", n.ID, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if openMetrics {
		return nil, string(body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("node %d: /metrics is not the Prometheus text format: %v", n.ID, err)
	}
	return fams, string(body)
}

// newMetricsQuorum formats three kraftd controllers, each with a metrics
// listener on a free port (the first with pprof), and starts them; the
// test stops them.
func newMetricsQuorum(t *testing.T) []*metricsNode {
	nodes := newKraftdStaticQuorum(t, 3)
	ports := FreePorts(t, len(nodes))
	var out []*metricsNode
	for i, n := range nodes {
		m := &metricsNode{kraftdNode: n, metricsAddr: Addr(ports[i])}
		appendProperty(t, n.Conf, "kraftd.metrics.listener", "http://"+m.metricsAddr)
		if i == 0 {
			appendProperty(t, n.Conf, "kraftd.metrics.pprof.enable", "true")
		}
		n.start(t)
		out = append(out, m)
	}
	t.Cleanup(func() {
		for _, n := range out {
			n.Proc.Stop()
		}
	})
	return out
}

func appendProperty(t *testing.T, conf, key, value string) {
	t.Helper()
	if err := appendFile(conf, fmt.Sprintf("%s=%s\n", key, value)); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until every node in nodes answers /readyz ready.
func waitReady(t *testing.T, nodes []*metricsNode, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, n := range nodes {
		for {
			r, code, err := n.readyz()
			if err == nil && r.Ready && code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d not ready after %v: %+v (HTTP %d, %v)", n.ID, within, r, code, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// readyLeaderOf waits until a node answers /readyz as a ready leader, and
// returns it. On a loaded machine the quorum can be between leaders (a
// starved leader misses the fetch timeout), so it polls.
func readyLeaderOf(t *testing.T, nodes []*metricsNode) *metricsNode {
	t.Helper()
	var leader *metricsNode
	Eventually(t, ReadyTimeout, "a ready leader", nil, func() error {
		// A leader that was paused answers as a ready leader of its old
		// epoch for the moment before it reads the newer leader's
		// BeginQuorumEpoch: the leader is the one of the newest epoch
		// any node knows.
		leader = nil
		var leaderEpoch, newest int32 = -1, -1
		for _, n := range nodes {
			r, _, err := n.readyz()
			if err != nil {
				continue
			}
			newest = max(newest, r.Epoch)
			if r.Role == "leader" && r.Ready && r.Epoch > leaderEpoch {
				leader, leaderEpoch = n, r.Epoch
			}
		}
		if leader == nil || leaderEpoch < newest {
			leader = nil
			return fmt.Errorf("no node answers /readyz as a ready leader of the newest epoch (%d)", newest)
		}
		return nil
	})
	return leader
}

func familyValue(f *dto.MetricFamily) float64 {
	if f == nil || len(f.Metric) == 0 {
		return 0
	}
	m := f.Metric[0]
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// TestKraftdMetricsAndReadiness runs three kraftd controllers with metrics
// listeners: every Strimzi KRaft dashboard and controller-alert series and
// the other Apache controller names are served, in both exposition
// formats, with one active controller among the three; then the leader's
// /readyz turns not ready once its followers stop (SIGSTOP), and every
// node is ready again once they continue; then the leader stops, its
// followers turn not ready and are ready again under a new leader; then
// Strimzi's AbnormalControllerState alert fires while no controller can be
// active (with brokers registered, every query of the dashboard kraftd
// ships returns data, and its alert rules evaluate: dashboard_test.go), and its OfflinePartitions alert while an Apache broker holding
// a partition's only replica is down (prometheus_test.go,
// metrics_offline_test.go).
func TestKraftdMetricsAndReadiness(t *testing.T) {
	t.Parallel()
	nodes := newMetricsQuorum(t)
	prom := startQuorumPrometheus(t, nodes)
	waitReady(t, nodes, ReadyTimeout)
	checkDashboardQueries(t, prom, nodes)

	checkScrapes(t, nodes)
	fleet := startBrokerFleet(t, nodes)
	checkBrokerMetrics(t, nodes)
	t.Run("KraftdDashboard", func(t *testing.T) { checkKraftdDashboard(t, prom) })
	checkStatusCommand(t, nodes)
	fleet.Stop()
	checkPprof(t, nodes)

	stoppedEarlier, orphan := checkReadiness(t, nodes, readyLeaderOf(t, nodes))
	stopped := checkLifecycleLog(t, nodes, stoppedEarlier, orphan)
	checkControllerAlert(t, prom, nodes, stopped)
	checkOfflinePartitionsAlert(t, prom, nodes)
}

// checkLifecycleLog stops the leader gracefully and reads the lifecycle in
// the logs: what start-up recovered, the leadership won and lost with
// reasons, the resignation to the two other voters and the stop; and the
// fetch timeout as the reason for the pre-vote of orphan, the follower
// that saw its leader stop in checkReadiness.
func checkLifecycleLog(t *testing.T, nodes []*metricsNode, stoppedEarlier, orphan *metricsNode) *metricsNode {
	t.Helper()
	leader := readyLeaderOf(t, nodes)
	// SIGTERM, and the process's own exit, however long its resignation
	// takes on a loaded machine: Proc.Stop would SIGKILL it after
	// StopTimeout, cutting the log this reads.
	if err := leader.Proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := leader.Proc.Wait(ReadyTimeout); err != nil {
		leader.Proc.QuitThenKill() // its goroutines' stacks, in the log below
		t.Fatalf("leader %d after SIGTERM: %v", leader.ID, err)
	}
	out := leader.Proc.Output()
	for _, want := range []string{
		`"message":"recovered the metadata log"`,
		`"message":"won leadership"`,
		`"reason":"won the election of epoch`,
		`"reason":"resigning to stop: EndQuorumEpoch to the other voters","time"`,
		`"message":"lost leadership"`,
		`"message":"resigned leadership to stop"`,
		`"message":"quorum loop stopped"`,
		`"message":"stopped"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("leader %d's log lacks %s", leader.ID, want)
		}
	}
	var resigned struct {
		To         []int32 `json:"end_quorum_epoch_to"`
		Successors []int32 `json:"preferred_successors"`
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"message":"resigned leadership to stop"`) {
			if err := json.Unmarshal([]byte(line), &resigned); err != nil {
				t.Errorf("%v: %s", err, line)
			}
		}
	}
	if len(resigned.To) != 2 || len(resigned.Successors) != 2 {
		t.Errorf("leader %d resigned to %v naming successors %v, want the two other voters", leader.ID, resigned.To, resigned.Successors)
	}
	// The leader stopped earlier in the test lost its leadership while it
	// was stopped, and follows the new leader since.
	old := stoppedEarlier.Proc.Output()
	led := strings.LastIndex(old, `"role":"Leader"`)
	if led < 0 || !strings.Contains(old[led:], `"message":"lost leadership"`) || !strings.Contains(old[led:], `"role":"Follower"`) {
		t.Errorf("node %d's log lacks its lost leadership and its following the new leader", stoppedEarlier.ID)
	}
	if !strings.Contains(orphan.Proc.Output(), "controller.quorum.fetch.timeout.ms") {
		t.Errorf("node %d's log lacks the fetch timeout as a reason for its pre-vote", orphan.ID)
	}
	return leader
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkStatusCommand runs `kraftd status` against a follower and checks it
// finds the leader and its three voters, as JSON and as a table. On a
// loaded machine the leader can change between the look and the command:
// it tries again until both agree.
func checkStatusCommand(t *testing.T, nodes []*metricsNode) {
	t.Helper()
	var table string
	Eventually(t, ReadyTimeout, "kraftd status naming the ready leader", nil, func() error {
		var err error
		table, err = statusAgainstFollower(t, nodes, readyLeaderOf(t, nodes))
		return err
	})
	t.Logf("kraftd status:\n%s", table)
}

// statusAgainstFollower runs `kraftd status` against a follower of leader,
// as JSON and as a table, and returns the table, or what disagrees.
func statusAgainstFollower(t *testing.T, nodes []*metricsNode, leader *metricsNode) (string, error) {
	t.Helper()
	var follower *metricsNode
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	p := StartKraftd(t, "kraftd-status", "status", "--bootstrap-controller", follower.Addr(), "--metrics", "http://"+follower.metricsAddr, "--json")
	if err := p.Wait(ReadyTimeout); err != nil {
		// Exit 1 or 2: degraded or down for a moment, as a loaded
		// machine's quorum can be.
		return "", fmt.Errorf("kraftd status: %v\n%s", err, p.Output())
	}
	var st struct {
		LeaderID        int32  `json:"leader_id"`
		LeaderEpoch     int32  `json:"leader_epoch"`
		HighWatermark   int64  `json:"high_watermark"`
		MetadataVersion string `json:"metadata_version"`
		Voters          []struct {
			ID             int32 `json:"id"`
			LogEndOffset   int64 `json:"log_end_offset"`
			LastFetchAgoMs int64 `json:"last_fetch_ago_ms"`
		} `json:"voters"`
		Controllers []struct{} `json:"controllers"`
		Brokers     *struct {
			Active int `json:"active"`
		} `json:"brokers"`
	}
	out := p.Output()
	i := strings.Index(out, "{")
	if i < 0 {
		t.Fatalf("kraftd status --json printed no JSON:\n%s", out)
	}
	if err := json.Unmarshal([]byte(out[i:]), &st); err != nil {
		t.Fatalf("kraftd status --json: %v\n%s", err, out)
	}
	if st.LeaderID != leader.ID || st.LeaderEpoch < 1 || st.HighWatermark < 1 || len(st.Voters) != 3 || len(st.Controllers) != 3 ||
		st.Brokers == nil || st.Brokers.Active != 2 || !strings.HasPrefix(st.MetadataVersion, "4.") {
		return "", fmt.Errorf("kraftd status --json against follower %d (leader %d):\n%s", follower.ID, leader.ID, out)
	}
	for _, v := range st.Voters {
		if v.LogEndOffset < 1 || v.LastFetchAgoMs < 0 {
			t.Errorf("voter %d: log end %d, last fetch %d ms ago\n%s", v.ID, v.LogEndOffset, v.LastFetchAgoMs, out)
		}
	}
	p = StartKraftd(t, "kraftd-status-table", "status", "--bootstrap-controller", follower.Addr())
	if err := p.Wait(ReadyTimeout); err != nil {
		return "", fmt.Errorf("kraftd status: %v\n%s", err, p.Output())
	}
	table := p.Output()
	if !strings.Contains(table, fmt.Sprintf("leader:            %d (epoch %d)", leader.ID, st.LeaderEpoch)) ||
		!strings.Contains(table, fmt.Sprintf("\n%d     leader", leader.ID)) {
		return "", fmt.Errorf("kraftd status table, leader %d of epoch %d:\n%s", leader.ID, st.LeaderEpoch, table)
	}
	return table, nil
}

// checkPprof finds pprof on the node that enabled it, and only there.
func checkPprof(t *testing.T, nodes []*metricsNode) {
	t.Helper()
	for i, n := range nodes {
		resp, err := http.Get("http://" + n.metricsAddr + "/debug/pprof/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if enabled := i == 0; enabled != (resp.StatusCode == http.StatusOK && strings.Contains(string(body), "start")) {
			t.Errorf("node %d (pprof enabled: %v): /debug/pprof/cmdline answered %d %.100q", n.ID, enabled, resp.StatusCode, body)
		}
	}
}

// checkScrapes reads every node's /metrics in both formats: the Strimzi,
// Apache and kraftd names are there, one node is the active controller and
// in current_state leader, and each counts three voters. The one active
// controller is waited for: a loaded machine's quorum can be between
// leaders, two nodes briefly saying leader.
func checkScrapes(t *testing.T, nodes []*metricsNode) {
	t.Helper()
	var scraped []map[string]*dto.MetricFamily
	Eventually(t, ReadyTimeout, "one active controller in current_state leader", nil, func() error {
		scraped = scraped[:0]
		active, leaders := 0.0, 0
		for _, n := range nodes {
			fams, _ := n.scrape(t, false)
			scraped = append(scraped, fams)
			active += familyValue(fams["kafka_controller_kafkacontroller_activecontrollercount"])
			if isLeader(fams) {
				leaders++
			}
		}
		if active != 1 || leaders != 1 {
			return fmt.Errorf("sum(activecontrollercount) = %v and %d nodes in current_state leader, want 1 and 1 (Strimzi's AbnormalControllerState)", active, leaders)
		}
		return nil
	})
	for i, n := range nodes {
		fams := scraped[i]
		var missing []string
		want := append(append(append([]string{}, strimziKRaftNames...), apacheControllerNames...), kraftdHistograms...)
		if isLeader(fams) {
			want = append(want, leaderOnlyNames...)
		}
		for _, name := range want {
			if fams[name] == nil {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			t.Errorf("node %d serves no %s", n.ID, strings.Join(missing, ", "))
		}
		if got := familyValue(fams["kafka_server_raftmetrics_number_of_voters"]); got != 3 {
			t.Errorf("node %d: number_of_voters = %v, want 3", n.ID, got)
		}
		checkFeatureMetrics(t, n, fams)
		_, om := n.scrape(t, true)
		if !strings.HasSuffix(strings.TrimSpace(om), "# EOF") ||
			!strings.Contains(om, "\nkafka_server_raftchannelmetrics_request_total ") ||
			!strings.Contains(om, "\nkafka_controller_kafkacontroller_activecontrollercount ") {
			t.Errorf("node %d: the OpenMetrics answer lacks the Apache names or its # EOF:\n%.2000s", n.ID, om)
		}
	}
}

// isLeader: the scrape says current_state leader.
func isLeader(fams map[string]*dto.MetricFamily) bool {
	for _, m := range fams["kafka_server_raftmetrics_current_state"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "current_state" && l.GetValue() == "leader" {
				return true
			}
		}
	}
	return false
}
