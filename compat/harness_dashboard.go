package compat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The dashboard and alert rules kraftd ships (docs/operations.md,
// "Dashboards and alerts"), relative to this package's directory, where
// go test runs.
var (
	KraftdDashboardPath  = filepath.Join("..", "deploy", "grafana", "kraftd.json")
	KraftdAlertsPath     = filepath.Join("..", "deploy", "prometheus", "kraftd-alerts.yml")
	KraftdAlertTestsPath = filepath.Join("..", "deploy", "prometheus", "kraftd-alerts.test.yml")
)

// DashboardQuery is one query of a Grafana panel: the panel's title, the
// query's refId and its PromQL as the dashboard writes it, variables and all.
type DashboardQuery struct {
	Panel, RefID, Expr string
}

// grafanaPanel is the part of a Grafana panel the checks read; a row may
// hold its panels when collapsed.
type grafanaPanel struct {
	ID      int    `json:"id"`
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

// LoadDashboardQueries reads a Grafana dashboard's JSON and returns every
// panel's queries in the dashboard's order, and its template variables'
// names. A panel other than a row without a query is an error: it could
// show nothing.
func LoadDashboardQueries(path string) ([]DashboardQuery, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var d struct {
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
		Panels []grafanaPanel `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	var out []DashboardQuery
	ids := map[int]bool{}
	var walk func([]grafanaPanel) error
	walk = func(ps []grafanaPanel) error {
		for _, p := range ps {
			if ids[p.ID] {
				return fmt.Errorf("%s: panel id %d twice", path, p.ID)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				if err := walk(p.Panels); err != nil {
					return err
				}
				continue
			}
			if len(p.Targets) == 0 {
				return fmt.Errorf("%s: panel %q has no query", path, p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					return fmt.Errorf("%s: panel %q query %s is empty", path, p.Title, tg.RefID)
				}
				out = append(out, DashboardQuery{Panel: p.Title, RefID: tg.RefID, Expr: tg.Expr})
			}
		}
		return nil
	}
	return out, vars, walk(d.Panels)
}

// DashboardExpr is a panel's query as Grafana would send it for one job
// and all its controllers: $job, $instance (All: the regex .*) and
// $__rate_interval (a minute, Grafana's for a 15 s scrape) substituted.
// A variable left over is an error: Prometheus would refuse the query.
func DashboardExpr(expr, job string) (string, error) {
	out := strings.NewReplacer("$__rate_interval", "1m", "${job}", job, "$job", job, "${instance}", ".*", "$instance", ".*").Replace(expr)
	if i := strings.Index(out, "$"); i >= 0 {
		return "", fmt.Errorf("unknown variable at %q in %s", out[i:], expr)
	}
	return out, nil
}

// metricNameRE finds the series names a query or rule reads.
var metricNameRE = regexp.MustCompile(`\b(?:kafka|kraftd)_[a-z0-9_]+\b`)

// MetricNames are the kafka_* and kraftd_* series names text reads, a
// histogram's _bucket, _count and _sum as its own name.
func MetricNames(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range metricNameRE.FindAllString(text, -1) {
		if strings.HasPrefix(m, "kraftd_") {
			for _, s := range []string{"_bucket", "_count", "_sum"} {
				m = strings.TrimSuffix(m, s)
			}
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// PromRule is one rule of /api/v1/rules: its name and the health of its
// last evaluation.
type PromRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// Rules lists every loaded rule.
func (p *Prometheus) Rules() ([]PromRule, error) {
	resp, err := http.Get("http://" + p.Addr + "/api/v1/rules")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Groups []struct {
				Rules []PromRule `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	var out []PromRule
	for _, g := range body.Data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}
