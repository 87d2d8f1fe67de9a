package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// BrokerCounts are the brokers a controller has registered.
type BrokerCounts struct {
	Active             int `json:"active"`
	Fenced             int `json:"fenced"`
	ControlledShutdown int `json:"in_controlled_shutdown"`
}

var errNoBrokerGauges = errors.New("the answer holds no kafka_controller_kafkacontroller_activebrokercount: is it a kraftd metrics listener?")

// CountBrokers reads the broker counts from a kraftd metrics listener's
// Apache-named gauges: no Kafka request tells a client a controller's
// broker registrations.
func CountBrokers(ctx context.Context, url string) (*BrokerCounts, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
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
