package compat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Prometheus is a real Prometheus server (Debian's prometheus package,
// which .ci/run installs) scraping targets every second, queried through
// its HTTP API.
type Prometheus struct {
	Addr string
	Proc *Process
}

// PrometheusTarget is one scraped address and the labels its series get.
type PrometheusTarget struct {
	Addr   string
	Labels map[string]string
}

// StartPrometheus starts Prometheus scraping targets (job "kraftd") every
// second and evaluating rules (a rule file's YAML, or "") every second; it
// returns once the server answers. The test stops it.
func StartPrometheus(t testing.TB, targets []PrometheusTarget, rules string) *Prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("compat: prometheus is not installed: apt-get install prometheus (.ci/run installs it)")
	}
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n")
	if rules != "" {
		writeFile(t, filepath.Join(dir, "rules.yml"), []byte(rules))
		fmt.Fprintf(&cfg, "rule_files:\n  - %s\n", filepath.Join(dir, "rules.yml"))
	}
	cfg.WriteString("scrape_configs:\n  - job_name: kraftd\n    static_configs:\n")
	for _, tg := range targets {
		fmt.Fprintf(&cfg, "      - targets: ['%s']\n        labels:\n", tg.Addr)
		for k, v := range tg.Labels {
			fmt.Fprintf(&cfg, "          %s: '%s'\n", k, v)
		}
	}
	writeFile(t, filepath.Join(dir, "prometheus.yml"), []byte(cfg.String()))
	p := &Prometheus{Addr: Addr(FreePorts(t, 1)[0])}
	p.Proc = StartProcess(t, "prometheus", bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+p.Addr, "--log.level=warn")
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + p.Addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("compat: prometheus not ready after a minute: %v\n%s", err, p.Proc.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// PromSample is one series of an instant query's answer.
type PromSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// Query runs an instant PromQL query.
func (p *Prometheus) Query(expr string) ([]PromSample, error) {
	return promAPI[PromSample](p, "query", url.Values{"query": {expr}})
}

// promAPI asks Prometheus's HTTP API endpoint (query, query_range) and
// returns the result of a successful answer.
func promAPI[T any](p *Prometheus, endpoint string, q url.Values) ([]T, error) {
	resp, err := http.Get("http://" + p.Addr + "/api/v1/" + endpoint + "?" + q.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []T `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, errorf("%s %s: %s", endpoint, q.Get("query"), body.Error)
	}
	return body.Data.Result, nil
}

// PromAlert is one alert of /api/v1/alerts.
type PromAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// Alerts lists the pending and firing alerts.
func (p *Prometheus) Alerts() ([]PromAlert, error) {
	resp, err := http.Get("http://" + p.Addr + "/api/v1/alerts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Alerts []PromAlert `json:"alerts"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	return body.Data.Alerts, err
}

// AlertState is the state of the named alert: "firing", "pending", or ""
// when it is not active.
func (p *Prometheus) AlertState(name string) (string, error) {
	alerts, err := p.Alerts()
	state := ""
	for _, a := range alerts {
		if a.Labels["alertname"] == name && (state == "" || a.State == "firing") {
			state = a.State
		}
	}
	return state, err
}

// PromSeries is one series of a range query's answer: its labels and its
// samples, [unix seconds, "value"].
type PromSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// QueryRange runs a range query from start to end at step.
func (p *Prometheus) QueryRange(expr string, start, end time.Time, step time.Duration) ([]PromSeries, error) {
	q := url.Values{}
	q.Set("query", expr)
	q.Set("start", fmt.Sprint(start.Unix()))
	q.Set("end", fmt.Sprint(end.Unix()))
	q.Set("step", fmt.Sprint(step.Seconds()))
	return promAPI[PromSeries](p, "query_range", q)
}
