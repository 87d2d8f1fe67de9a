package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kraftd/kraftd/storage/uuid"
)

func kmsgUUID(id [16]byte) string { return uuid.UUID(id).String() }

// brokersFromMetrics counts the brokers from a kraftd metrics listener's
// Apache-named gauges.
func brokersFromMetrics(ctx context.Context, url string) (*brokerCounts, error) {
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
	return &brokerCounts{Active: active, Fenced: fenced, ControlledShutdown: shutdown}, nil
}

func agoText(ms int64) string {
	if ms < 0 {
		return "never"
	}
	return fmt.Sprintf("%d ms ago", ms)
}

// printStatus writes st as a few lines and a table of the replicas.
func printStatus(w io.Writer, st *quorumStatus) {
	fmt.Fprintf(w, "cluster id:        %s\n", st.ClusterID)
	fmt.Fprintf(w, "leader:            %d (epoch %d)\n", st.LeaderID, st.LeaderEpoch)
	fmt.Fprintf(w, "high watermark:    %d\n", st.HighWatermark)
	fmt.Fprintf(w, "metadata.version:  %s\n", st.MetadataVersion)
	fmt.Fprintf(w, "kraft.version:     %d\n", st.KRaftVersion)
	var ctl []string
	for _, c := range st.Controllers {
		ctl = append(ctl, fmt.Sprintf("%d@%s:%d", c.ID, c.Host, c.Port))
	}
	fmt.Fprintf(w, "controllers:       %s\n", strings.Join(ctl, " "))
	if b := st.Brokers; b != nil {
		fmt.Fprintf(w, "brokers:           %d registered: %d active, %d fenced, %d in controlled shutdown\n",
			b.Active+b.Fenced, b.Active, b.Fenced, b.ControlledShutdown)
	} else {
		fmt.Fprintf(w, "brokers:           not known over the Kafka protocol (--metrics http://<controller>:<port> counts them)\n")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tDIRECTORY\tLOG END\tLAG\tLAST FETCH\tLAST CAUGHT UP")
	row := func(r replicaStatus, role string) {
		if r.ID == st.LeaderID && role == "voter" {
			role = "leader"
		}
		dir := r.DirectoryID
		if dir == "" {
			dir = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\n", r.ID, role, dir, r.LogEndOffset, r.Lag, agoText(r.LastFetchAgoMs), agoText(r.LastCaughtUpAgoMs))
	}
	for _, r := range st.Voters {
		row(r, "voter")
	}
	for _, r := range st.Observers {
		row(r, "observer")
	}
	tw.Flush()
}
