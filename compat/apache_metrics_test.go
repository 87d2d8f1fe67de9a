package compat

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// apacheNamesNotServed are the controller series an Apache controller
// exposes through the JMX exporter with Strimzi's rules that kraftd does
// not serve, each with the reason (docs/metrics.md says the same).
var apacheNamesNotServed = map[string]string{
	"kafka_controller_controllereventmanager_eventqueuetimems_count_total":           "kraftd's controller has no event queue",
	"kafka_controller_controllereventmanager_eventqueueprocessingtimems_count_total": "kraftd's controller has no event queue",
	"kafka_controller_controllereventmanager_avgidleratio":                           "no event queue; the quorum loop's idle share is poll_idle_ratio_avg",
	"kafka_controller_kafkacontroller_eventqueueoperationsstartedcount":              "no event queue",
	"kafka_controller_kafkacontroller_eventqueueoperationstimedoutcount":             "no event queue",
	"kafka_server_metadataloader_avgidleratio":                                       "no metadata loader thread: replay runs on the quorum loop",
	"kafka_server_raftmetrics_current_vote_directory_id":                             "a string, which the rules drop",
}

// selectorOnly names the raft channel's series that come from Apache's
// network selector (its I/O and select times, connection churn,
// authentication and re-authentication counts, and per-second rates of
// what request_total and its siblings count): kraftd's peer client has no
// selector, and serves the four totals Strimzi's dashboard reads.
const selectorOnly = "the network selector's internals; kraftd serves the raft channel's request, response and byte totals"

func init() {
	for _, name := range []string{
		"connection_close_rate", "connection_close_total", "connection_count", "connection_creation_rate",
		"connection_creation_total", "failed_authentication_rate", "failed_authentication_total",
		"failed_reauthentication_rate", "failed_reauthentication_total", "incoming_byte_rate", "io_ratio",
		"io_time_ns_avg", "io_time_ns_total", "io_wait_ratio", "io_wait_time_ns_avg", "io_wait_time_ns_total",
		"network_io_rate", "network_io_total", "outgoing_byte_rate", "reauthentication_latency_avg",
		"reauthentication_latency_max_total", "request_rate", "request_size_avg", "request_size_max_total",
		"response_rate", "select_rate", "select_total", "successful_authentication_no_reauth_total",
		"successful_authentication_rate", "successful_authentication_total", "successful_reauthentication_rate",
		"successful_reauthentication_total",
	} {
		apacheNamesNotServed["kafka_server_raftchannelmetrics_"+name] = selectorOnly
	}
}

// apacheNamePrefixes select the controller's own series among what the
// JMX exporter sees of the JVM.
var apacheNamePrefixes = []string{
	"kafka_server_raftmetrics_", "kafka_server_raftchannelmetrics_", "kafka_controller_",
	"kafka_server_metadataloader_", "kafka_server_snapshotemitter_",
}

// scrapeNames reads the metric names (family names as a scraper stores
// them) at a /metrics URL.
func scrapeNames(t *testing.T, url string) map[string]bool {
	t.Helper()
	fams := scrapeFamilies(t, url)
	names := map[string]bool{}
	for name, f := range fams {
		for _, prefix := range apacheNamePrefixes {
			if strings.HasPrefix(name, prefix) {
				names[name] = true
				if f.GetType().String() == "HISTOGRAM" || f.GetType().String() == "SUMMARY" {
					names[name+"_count"] = true
				}
			}
		}
	}
	return names
}

// scrapeFamilies reads the metric families at a /metrics URL.
func scrapeFamilies(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	return fams
}

// TestApacheControllerMetricNames captures the metric names a real Apache
// 4.1.2 controller exposes through the Prometheus JMX exporter (the agent
// Strimzi runs) with Strimzi's naming rules, and checks that a kraftd
// controller serves each one, or that it is listed with the reason it is
// not. make matrix (build tag matrix) captures 4.4.0's too.
func TestApacheControllerMetricNames(t *testing.T) {
	t.Parallel()
	versions := []string{"4.1.2"}
	if matrixBuild {
		versions = Versions
	}
	for _, v := range versions {
		t.Run(v, func(t *testing.T) { checkApacheControllerMetricNames(t, v) })
	}
}

func checkApacheControllerMetricNames(t *testing.T, version string) {
	ReserveJVMs(t, 2)
	agent := filepath.Join(os.Getenv(CacheEnv), "jmx-exporter", "jmx_prometheus_javaagent.jar")
	if _, err := os.Stat(agent); err != nil {
		t.Fatalf("the JMX exporter is not fetched: run `make kafka` (scripts/fetch-jmx-exporter.sh): %v", err)
	}
	ports := FreePorts(t, 2)
	apache := NewApacheController(t, ApacheOptions{Version: version, NodeID: 1})
	apache.Format(t, NewUUID(), "--standalone")
	rules := filepath.Join(RepoRoot(t), "compat", "testdata", "jmx-exporter-controller.yml")
	apache.JVM.Options = []string{fmt.Sprintf("-javaagent:%s=127.0.0.1:%d:%s", agent, ports[0], rules)}
	apache.Start(t)
	apache.WaitReady(t)

	dir := filepath.Join(t.TempDir(), "metadata")
	kport := FreePorts(t, 1)[0]
	conf := WriteKraftdConfig(t, 1, Addr(kport), dir, map[string]string{
		"controller.quorum.bootstrap.servers": Addr(kport),
		"kraftd.metrics.listener":             "http://" + Addr(ports[1]),
	})
	format := StartKraftd(t, "kraftd-format", "format", "--config", conf, "--cluster-id", NewUUID(), "--standalone")
	if err := format.Wait(time.Minute); err != nil {
		t.Fatalf("format: %v\n%s", err, format.Output())
	}
	k := &metricsNode{kraftdNode: &kraftdNode{ID: 1, Port: kport, Dir: dir, Conf: conf}, metricsAddr: Addr(ports[1])}
	k.start(t)
	waitReady(t, []*metricsNode{k}, time.Minute)

	// Wait until the Apache controller leads and its agent shows the
	// leader's metrics (number-of-observers is added on leading).
	var apacheNames map[string]bool
	deadline := time.Now().Add(2 * time.Minute)
	for {
		apacheNames = scrapeNames(t, fmt.Sprintf("http://%s/metrics", Addr(ports[0])))
		if apacheNames["kafka_server_raftmetrics_number_of_observers"] && apacheNames["kafka_controller_kafkacontroller_activecontrollercount"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Apache controller's agent shows no leader metrics after 2 minutes: %v", apacheNames)
		}
		time.Sleep(500 * time.Millisecond)
	}
	kraftdNames := scrapeNames(t, "http://"+k.metricsAddr+"/metrics")
	compareFeatureLevels(t, fmt.Sprintf("http://%s/metrics", Addr(ports[0])), "http://"+k.metricsAddr+"/metrics")
	var served, missing, excused []string
	for name := range apacheNames {
		switch {
		case kraftdNames[name]:
			served = append(served, name)
		case apacheNamesNotServed[name] != "":
			excused = append(excused, name+" ("+apacheNamesNotServed[name]+")")
		default:
			missing = append(missing, name)
		}
	}
	sort.Strings(served)
	sort.Strings(missing)
	sort.Strings(excused)
	t.Logf("%d Apache %s controller names served by kraftd: %s", len(served), version, strings.Join(served, " "))
	byReason := map[string]int{}
	for _, e := range excused {
		byReason[e[strings.Index(e, " (")+2:len(e)-1]]++
	}
	t.Logf("%d not served, by reason: %v", len(excused), byReason)
	if len(missing) > 0 {
		t.Errorf("kraftd serves no %s, which Apache %s's controller exposes through the JMX exporter", strings.Join(missing, ", "), version)
	}
}
