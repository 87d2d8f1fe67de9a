package compat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKraftdAlertRules checks the alert rules kraftd ships with promtool:
// they parse (check rules), and their unit tests pass (test rules); every
// alert has a test in which it fires and one in which it is quiet, and
// every series a rule reads is one docs/metrics.md lists.
func TestKraftdAlertRules(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("compat: promtool is not installed: apt-get install prometheus (.ci/run installs it)")
	}
	for _, args := range [][]string{{"check", "rules", filepath.Base(KraftdAlertsPath)}, {"test", "rules", filepath.Base(KraftdAlertTestsPath)}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = filepath.Dir(KraftdAlertsPath)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
	rules := readText(t, KraftdAlertsPath)
	alerts := regexp.MustCompile(`(?m)^\s*- alert: (\S+)\s*$`).FindAllStringSubmatch(rules, -1)
	if len(alerts) == 0 {
		t.Fatalf("%s holds no alert", KraftdAlertsPath)
	}
	fires, quiet := alertTestCases(readText(t, KraftdAlertTestsPath))
	for _, a := range alerts {
		if !fires[a[1]] || !quiet[a[1]] {
			t.Errorf("alert %s: a test where it fires: %v, where it is quiet: %v; want both in %s", a[1], fires[a[1]], quiet[a[1]], KraftdAlertTestsPath)
		}
	}
	checkDocumentedNames(t, KraftdAlertsPath, rules)
}

// alertTestCases reads a promtool test file's alert_rule_test cases: the
// alerts some case expects firing, and those some case expects quiet
// (exp_alerts: []).
func alertTestCases(text string) (fires, quiet map[string]bool) {
	fires, quiet = map[string]bool{}, map[string]bool{}
	name := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "alertname:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "alertname:"))
		case line == "exp_alerts: []":
			quiet[name] = true
		case strings.HasPrefix(line, "- exp_labels:"):
			fires[name] = true
		}
	}
	return fires, quiet
}

// TestKraftdDashboardFile reads the Grafana dashboard kraftd ships: it
// parses, every panel has queries, every variable a query uses is one the
// dashboard defines or Grafana's $__rate_interval, and every series a
// query reads is one docs/metrics.md lists. The queries' answers are
// checked on a real quorum by TestKraftdMetricsAndReadiness.
func TestKraftdDashboardFile(t *testing.T) {
	t.Parallel()
	queries, vars, err := LoadDashboardQueries(KraftdDashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(vars, ",") != "datasource,job,instance" {
		t.Errorf("dashboard variables %v, want datasource, job, instance (what DashboardExpr substitutes)", vars)
	}
	var all strings.Builder
	for _, q := range queries {
		if _, err := DashboardExpr(q.Expr, "kraftd"); err != nil {
			t.Errorf("panel %q query %s: %v", q.Panel, q.RefID, err)
		}
		all.WriteString(q.Expr + "\n")
	}
	checkDocumentedNames(t, KraftdDashboardPath, all.String())
	t.Logf("%d queries in %s", len(queries), KraftdDashboardPath)
}

// checkDocumentedNames fails for a kafka_* or kraftd_* series that text
// (from file) reads and docs/metrics.md does not list.
func checkDocumentedNames(t *testing.T, file, text string) {
	t.Helper()
	doc := readText(t, filepath.Join("..", "docs", "metrics.md"))
	for _, name := range MetricNames(text) {
		// The doc writes an average and its maximum as one row: `x_avg` / `_max_total`.
		pair := "`" + strings.TrimSuffix(name, "_max_total") + "_avg` / `_max_total`"
		if !strings.Contains(doc, "`"+name) && !strings.Contains(doc, pair) {
			t.Errorf("%s reads %s, which docs/metrics.md does not list", file, name)
		}
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// kraftdRuleGroups is the alert rules file's groups, to be loaded into
// the test's Prometheus beside quorumRules: the file without its
// top-level "groups:" key.
func kraftdRuleGroups(t *testing.T) string {
	t.Helper()
	text := readText(t, KraftdAlertsPath)
	i := strings.Index(text, "\ngroups:\n")
	if i < 0 {
		t.Fatalf("%s: no top-level groups:", KraftdAlertsPath)
	}
	return text[i+len("\ngroups:\n"):]
}

// dashboardWants are the answers some queries must give on the test's
// quorum, by panel and refId: the two simulated brokers registered and
// unfenced, the one active controller, the three voters.
var dashboardWants = map[string]string{
	"Active controllers A": "1",
	"Voters A":             "3",
	"Voters B":             "3",
	"Brokers A":            "2",
	"Brokers B":            "0",
}

// shownLabels are the labels of a dashboard answer worth printing: the
// ones a panel's legend shows, not the scrape's.
func shownLabels(m map[string]string) string {
	var out []string
	for _, k := range []string{"instance", "current_state", "api", "listener", "outcome", "broker"} {
		if v, ok := m[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "{" + strings.Join(out, ",") + "} "
}

// checkKraftdDashboard runs every query of the dashboard kraftd ships
// against a real Prometheus scraping the quorum (job "kraftd"), with
// Grafana's variables substituted, until each returns data; and waits
// until Prometheus has evaluated every kraftd alert rule on the quorum's
// series without an error. Some answers must be the quorum's
// (dashboardWants). It prints the panels checked with each query's series
// count and first answer.
func checkKraftdDashboard(t *testing.T, prom *Prometheus) {
	queries, _, err := LoadDashboardQueries(KraftdDashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	table.WriteString("| panel | query | series | first answer |\n|---|---|---|---|\n")
	panels := map[string]bool{}
	for _, q := range queries {
		expr, err := DashboardExpr(q.Expr, "kraftd")
		if err != nil {
			t.Fatal(err)
		}
		want, wantSet := dashboardWants[q.Panel+" "+q.RefID]
		var res []PromSample
		Eventually(t, alertTimeout, fmt.Sprintf("panel %q query %s returning data: %s", q.Panel, q.RefID, expr), nil, func() error {
			res, err = prom.Query(expr)
			switch {
			case err != nil:
				return err
			case len(res) == 0:
				return fmt.Errorf("no series")
			case wantSet && fmt.Sprint(res[0].Value[1]) != want:
				return fmt.Errorf("%v, want %s", res[0].Value[1], want)
			}
			return nil
		})
		panels[q.Panel] = true
		fmt.Fprintf(&table, "| %s | %s | %d | %s%v |\n", q.Panel, q.RefID, len(res), shownLabels(res[0].Metric), res[0].Value[1])
	}
	t.Logf("kraftd dashboard (%s): %d panels, %d queries, each returned data:\n%s", KraftdDashboardPath, len(panels), len(queries), table.String())

	names := regexp.MustCompile(`(?m)^\s*- alert: (\S+)\s*$`).FindAllStringSubmatch(readText(t, KraftdAlertsPath), -1)
	Eventually(t, alertTimeout, "every kraftd alert rule evaluated without error", nil, func() error {
		rules, err := prom.Rules()
		if err != nil {
			return err
		}
		health := map[string]PromRule{}
		for _, r := range rules {
			health[r.Name] = r
		}
		for _, n := range names {
			if r := health[n[1]]; r.Health != "ok" {
				return fmt.Errorf("rule %s: health %q %s", n[1], r.Health, r.LastError)
			}
		}
		return nil
	})
	t.Logf("Prometheus evaluated the %d kraftd alert rules on the quorum without error", len(names))
}
