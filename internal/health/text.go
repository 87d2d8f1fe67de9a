package health

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteText writes r for a person: the leader's view, a line per
// controller, the observers, and the diagnosis last.
func WriteText(w io.Writer, r *Report) {
	fmt.Fprintf(w, "cluster id:        %s\n", orUnknown(r.ClusterID))
	if r.LeaderID >= 0 {
		fmt.Fprintf(w, "leader:            %d (epoch %d)\n", r.LeaderID, r.LeaderEpoch)
		fmt.Fprintf(w, "high watermark:    %d\n", r.HighWatermark)
	} else {
		fmt.Fprintf(w, "leader:            none answers\n")
	}
	fmt.Fprintf(w, "metadata.version:  %s\n", r.MetadataVersion)
	if r.LeaderID >= 0 {
		fmt.Fprintf(w, "kraft.version:     %d\n", r.KRaftVersion)
	}
	var ctl []string
	for _, c := range r.Controllers {
		ctl = append(ctl, fmt.Sprintf("%d@%s", c.ID, c))
	}
	fmt.Fprintf(w, "controllers:       %s\n", orUnknown(strings.Join(ctl, " ")))
	fmt.Fprintf(w, "brokers:           %s\n", brokersText(r))
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tADDRESS\tSTATE\tEPOCH\tLEADER\tLOG END\tLAG\tLAST FETCH\tCLUSTER ID\tVERSION")
	for _, p := range r.Probes {
		state := "up"
		if !p.Reachable {
			state = "down"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", num(int64(p.ID)), p.Role, p.Address, state, num(int64(p.Epoch)),
			num(int64(p.LeaderID)), num(p.LogEndOffset), num(p.Lag), agoOrDash(p), orDash(p.ClusterID), p.SupportedMetadataVersion)
	}
	tw.Flush()
	for _, p := range r.Probes {
		if p.Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", nodeName(p), p.Error)
		}
	}
	if len(r.Observers) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "OBSERVER\tDIRECTORY\tLOG END\tLAG\tLAST FETCH\tLAST CAUGHT UP")
		for _, o := range r.Observers {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\n", o.ID, orDash(o.DirectoryID), o.LogEndOffset, o.Lag, AgoText(o.LastFetchAgoMs), AgoText(o.LastCaughtUpAgoMs))
		}
		tw.Flush()
	}
	for _, e := range r.MetricsErrors {
		fmt.Fprintf(w, "  %s\n", e)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "diagnosis: %s\n", r.Diagnosis.Summary)
}

// brokersText counts brokers from the metrics listener, else names the
// observers that are no known controller: the brokers fetching the log.
func brokersText(r *Report) string {
	if b := r.Brokers; b != nil {
		return fmt.Sprintf("%d registered: %d active, %d fenced, %d in controlled shutdown", b.Active+b.Fenced, b.Active, b.Fenced, b.ControlledShutdown)
	}
	const hint = "; --metrics http://<controller>:<port> counts their registrations"
	if r.LeaderID < 0 {
		return "not known without a leader" + hint
	}
	var ids []string
	for _, o := range r.Observers {
		isController := slices.ContainsFunc(r.Controllers, func(c Address) bool { return c.ID == o.ID }) ||
			slices.ContainsFunc(r.Probes, func(p *Probe) bool { return p.ID == o.ID })
		if !isController {
			ids = append(ids, fmt.Sprint(o.ID))
		}
	}
	if len(ids) == 0 {
		return "none fetches the metadata log" + hint
	}
	return fmt.Sprintf("%d fetching the metadata log as observers (%s)%s", len(ids), strings.Join(ids, ", "), hint)
}

func agoOrDash(p *Probe) string {
	if p.LogEndOffset < 0 {
		return "-"
	}
	return AgoText(p.LastFetchAgoMs)
}

func num(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
