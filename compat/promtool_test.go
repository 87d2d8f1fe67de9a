package compat

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkRecordedAlert replays what Prometheus recorded of every node's
// activecontrollercount from start to end through `promtool test rules`:
// the controller alert must fire where the recording had no single active
// controller for the rule's 2 s, and be quiet at the end, when one was
// back. The recorded series, not a hand-written one, are the input.
func checkRecordedAlert(t *testing.T, prom *Prometheus, start, end time.Time) {
	t.Helper()
	const metric = "kafka_controller_kafkacontroller_activecontrollercount"
	series, err := prom.QueryRange(metric, start, end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	steps := int(end.Unix()-start.Unix()) + 1
	sum := make([]float64, steps)
	present := make([]bool, steps)
	var input strings.Builder
	sort.Slice(series, func(i, j int) bool {
		return series[i].Metric["kubernetes_pod_name"] < series[j].Metric["kubernetes_pod_name"]
	})
	for _, s := range series {
		values := make([]string, steps)
		for i := range values {
			values[i] = "_"
		}
		for _, v := range s.Values {
			ts, _ := v[0].(float64)
			i := int(int64(ts) - start.Unix())
			f, err := strconv.ParseFloat(fmt.Sprint(v[1]), 64)
			if i < 0 || i >= steps || err != nil {
				continue
			}
			values[i] = strconv.FormatFloat(f, 'f', -1, 64)
			sum[i] += f
			present[i] = true
		}
		// A sample that stops is stale from there, as the scrape that
		// failed marked it.
		for i := 1; i < steps; i++ {
			if values[i] == "_" && values[i-1] != "_" && values[i-1] != "stale" {
				values[i] = "stale"
			}
		}
		fmt.Fprintf(&input, "      - series: '%s{namespace=\"%s\",kubernetes_pod_name=\"%s\"}'\n        values: '%s'\n",
			metric, s.Metric["namespace"], s.Metric["kubernetes_pod_name"], strings.Join(values, " "))
	}
	// The first step at which the rule's condition has held for 2 s.
	fire := -1
	for i := 2; i < steps && fire < 0; i++ {
		if present[i-2] && present[i-1] && present[i] && sum[i-2] != 1 && sum[i-1] != 1 && sum[i] != 1 {
			fire = i
		}
	}
	if fire < 0 || !present[steps-1] || sum[steps-1] != 1 {
		t.Fatalf("the recording has no 2 s without one active controller, or does not end with one: sums %v", sum)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "rules.yml"), []byte(quorumRules))
	test := fmt.Sprintf(`rule_files: [rules.yml]
evaluation_interval: 1s
tests:
  - interval: 1s
    input_series:
%s    alert_rule_test:
      - eval_time: %ds
        alertname: AbnormalControllerState
        exp_alerts:
          - exp_labels: {namespace: kraftd-test}
      - eval_time: %ds
        alertname: AbnormalControllerState
        exp_alerts: []
`, input.String(), fire, steps-1)
	writeFile(t, filepath.Join(dir, "test.yml"), []byte(test))
	cmd := exec.Command("promtool", "test", "rules", "test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n%s", err, out, test)
	}
	t.Logf("promtool test rules: AbnormalControllerState fires at %d s of the %d s recorded, quiet at the end", fire, steps-1)
}
