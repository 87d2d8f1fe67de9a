package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kraftd/kraftd/metrics"
)

// BrokerCounts are the brokers a controller has registered.
type BrokerCounts struct {
	Active             int `json:"active"`
	Fenced             int `json:"fenced"`
	ControlledShutdown int `json:"in_controlled_shutdown"`
}

var errNoBrokerGauges = errors.New("the answer holds no kafka_controller_kafkacontroller_activebrokercount: is it a kraftd metrics listener?")

// listenerView is what a kraftd controller's metrics listener adds to its
// Kafka answers: its readiness (the role as the node names it, how long
// ago it heard from a leader) and, in the metrics, the brokers.
type listenerView struct {
	ready   *metrics.Readiness
	brokers *BrokerCounts
}

// readListeners reads every metrics listener at once; a failure is
// reported as an error naming the URL, and the others still count.
func readListeners(ctx context.Context, urls []string, timeout time.Duration) ([]listenerView, []error) {
	views, errs := make([]listenerView, len(urls)), make([]error, len(urls))
	done := make(chan struct{})
	for i, url := range urls {
		go func() {
			defer func() { done <- struct{}{} }()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			views[i], errs[i] = readListener(ctx, strings.TrimSuffix(url, "/"))
			if errs[i] != nil {
				errs[i] = fmt.Errorf("--metrics %s: %w", url, errs[i])
			}
		}()
	}
	for range urls {
		<-done
	}
	return views, errs
}

func readListener(ctx context.Context, url string) (listenerView, error) {
	var v listenerView
	body, err := get(ctx, url+"/readyz", http.StatusServiceUnavailable)
	if err != nil {
		return v, err
	}
	v.ready = &metrics.Readiness{}
	if err := json.Unmarshal(body, v.ready); err != nil {
		return v, fmt.Errorf("/readyz: %w", err)
	}
	body, err = get(ctx, url+"/metrics", http.StatusOK)
	if err != nil {
		return v, err
	}
	v.brokers, err = countBrokers(body)
	return v, err
}

// get reads url's body; a status other than 200 and also is an error.
func get(ctx context.Context, url string, also int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != also {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// countBrokers reads the broker counts from a kraftd metrics listener's
// Apache-named gauges: no Kafka request tells a client a controller's
// broker registrations.
func countBrokers(body []byte) (*BrokerCounts, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	value := func(name string) (int, bool) {
		f := fams["kafka_controller_kafkacontroller_"+name]
		if f == nil || len(f.Metric) == 0 || f.Metric[0].Gauge == nil {
			return 0, false
		}
		return int(f.Metric[0].Gauge.GetValue()), true
	}
	active, ok := value("activebrokercount")
	if !ok {
		return nil, errNoBrokerGauges
	}
	fenced, _ := value("fencedbrokercount")
	shutdown, _ := value("controlledshutdownbrokercount")
	return &BrokerCounts{Active: active, Fenced: fenced, ControlledShutdown: shutdown}, nil
}

// addListeners puts what the metrics listeners said into r: each node's
// own role name and leader contact age onto its probe, and the brokers
// from the first listener that counts them.
func (r *Report) addListeners(views []listenerView) {
	for _, v := range views {
		if r.Brokers == nil && v.brokers != nil {
			r.Brokers = v.brokers
		}
		if v.ready == nil {
			continue
		}
		for _, p := range r.Probes {
			if p.ID == v.ready.NodeID && p.Reachable {
				p.Role, p.LeaderContactAgeMs = v.ready.Role, v.ready.LeaderContactAgeMs
			}
		}
	}
}
