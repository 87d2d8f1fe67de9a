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

// activeRecording is what Prometheus recorded of every node's
// activecontrollercount at 1 s steps from start: the input series for
// `promtool test rules`, and at each step whether any series was present
// and their sum.
type activeRecording struct {
	steps   int
	input   string
	sum     []float64
	present []bool
	// fire is the first step at which the rule's condition (present, and
	// no single active controller) has held for its 2 s; -1 if none.
	fire int
}

const activeMetric = "kafka_controller_kafkacontroller_activecontrollercount"

// recordActiveControllers reads the recording from start to end.
func recordActiveControllers(prom *Prometheus, start, end time.Time) (*activeRecording, error) {
	series, err := prom.QueryRange(activeMetric, start, end, time.Second)
	if err != nil {
		return nil, err
	}
	steps := int(end.Unix()-start.Unix()) + 1
	r := &activeRecording{steps: steps, sum: make([]float64, steps), present: make([]bool, steps), fire: -1}
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
			r.sum[i] += f
			r.present[i] = true
		}
		// A sample that stops is stale from there, as the scrape that
		// failed marked it.
		for i := 1; i < steps; i++ {
			if values[i] == "_" && values[i-1] != "_" && values[i-1] != "stale" {
				values[i] = "stale"
			}
		}
		fmt.Fprintf(&input, "      - series: '%s{namespace=\"%s\",kubernetes_pod_name=\"%s\"}'\n        values: '%s'\n",
			activeMetric, s.Metric["namespace"], s.Metric["kubernetes_pod_name"], strings.Join(values, " "))
	}
	r.input = input.String()
	for i := 2; i < steps && r.fire < 0; i++ {
		if r.present[i-2] && r.present[i-1] && r.present[i] && r.sum[i-2] != 1 && r.sum[i-1] != 1 && r.sum[i] != 1 {
			r.fire = i
		}
	}
	return r, nil
}

// waitRecording reads the settled recording from start until ok accepts
// it, and returns it: Prometheus scrapes every second, later and with
// gaps on a loaded machine, so what it recorded is waited for, not
// assumed after a sleep.
func waitRecording(t *testing.T, prom *Prometheus, start time.Time, what string, ok func(*activeRecording) error) *activeRecording {
	t.Helper()
	var rec *activeRecording
	Eventually(t, alertTimeout, what, nil, func() error {
		end, err := settledUntil(prom)
		if err != nil {
			return err
		}
		if end.Unix() < start.Unix() {
			return fmt.Errorf("nothing settled since %v yet (until %v)", start, end)
		}
		r, err := recordActiveControllers(prom, start, end)
		if err != nil {
			return err
		}
		if err := ok(r); err != nil {
			return err
		}
		rec = r
		return nil
	})
	return rec
}

// settledUntil is the time up to which the recording can no longer
// change: a scrape's samples carry the time it began but arrive when it
// ends, late on a loaded machine, and a failed one marks its series stale
// then, so the last second or more of a query can still move. A target's
// scrapes run one after the other, so once one that began at T has
// ended (its up sample is there, at T), nothing before T arrives for
// that target: the recording is settled up to the earliest such T over
// the targets.
func settledUntil(prom *Prometheus) (time.Time, error) {
	res, err := prom.Query(`min(timestamp(up{job="kraftd"}))`)
	if err != nil {
		return time.Time{}, err
	}
	if len(res) != 1 {
		return time.Time{}, fmt.Errorf("min(timestamp(up)): %v", res)
	}
	sec, err := strconv.ParseFloat(fmt.Sprint(res[0].Value[1]), 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(int64(sec * 1000)), nil
}

// checkRecordedAlert replays a recording of every node's
// activecontrollercount through `promtool test rules`: the controller
// alert must fire where the recording had no single active controller for
// the rule's 2 s, and be quiet at the end, when one was back. The recorded
// series, not a hand-written one, are the input.
func checkRecordedAlert(t *testing.T, r *activeRecording) {
	t.Helper()
	if r.fire < 0 || !r.present[r.steps-1] || r.sum[r.steps-1] != 1 {
		t.Fatalf("the recording has no 2 s without one active controller, or does not end with one: sums %v", r.sum)
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
`, r.input, r.fire, r.steps-1)
	writeFile(t, filepath.Join(dir, "test.yml"), []byte(test))
	cmd := exec.Command("promtool", "test", "rules", "test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n%s", err, out, test)
	}
	t.Logf("promtool test rules: AbnormalControllerState fires at %d s of the %d s recorded, quiet at the end", r.fire, r.steps-1)
}
