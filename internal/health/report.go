package health

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/server"
	"github.com/kraftd/kraftd/storage/uuid"
)

// Options bound and secure the probes.
type Options struct {
	Security *server.ClientSecurity
	// Timeout bounds each controller's answers; the controllers are asked
	// at once, in at most three rounds (the addresses given, then those
	// the answers name, twice), so Ask takes at most three times as long.
	Timeout time.Duration
	// Limits decide when a voter counts as lagging.
	Limits Limits
	// MetricsURLs are kraftd metrics listeners (http://host:port), read
	// for the brokers and each node's own role and leader contact age.
	MetricsURLs []string
}

// Report is the quorum as the controllers described it: the leader's view
// (when one answered), then every controller's own.
type Report struct {
	// ClusterID is the leader's, else the one most controllers answered.
	ClusterID       string `json:"cluster_id"`
	LeaderID        int32  `json:"leader_id"`
	LeaderEpoch     int32  `json:"leader_epoch"`
	HighWatermark   int64  `json:"high_watermark"`
	MetadataVersion string `json:"metadata_version"`
	KRaftVersion    int16  `json:"kraft_version"`
	// Voters and Observers are the leader's DescribeQuorum; empty without
	// a leader.
	Voters    []Replica `json:"voters"`
	Observers []Replica `json:"observers"`
	// Controllers are the registered controllers (DescribeCluster).
	Controllers []Address `json:"controllers"`
	// Brokers is nil when no metrics listener counted them.
	Brokers *BrokerCounts `json:"brokers,omitempty"`
	// MetricsErrors are the metrics listeners that did not answer.
	MetricsErrors []string `json:"metrics_errors,omitempty"`
	// VoterSource says where the voter set came from: leader (its
	// DescribeQuorum), config (controller.quorum.voters), or asked (no
	// leader and no static voters: every controller asked counts).
	VoterSource string `json:"voter_source"`
	// Probes is every controller's own answer, in id then address order.
	Probes    []*Probe  `json:"probes"`
	Diagnosis Diagnosis `json:"diagnosis"`
}

// Replica is one voter or observer in the leader's DescribeQuorum.
type Replica struct {
	ID           int32  `json:"id"`
	DirectoryID  string `json:"directory_id"`
	LogEndOffset int64  `json:"log_end_offset"`
	// Lag is the highest log end offset of a voter minus this replica's.
	Lag int64 `json:"lag"`
	// LastFetchAgoMs and LastCaughtUpAgoMs are how long before the leader
	// answered the replica last fetched and was last caught up; -1 when
	// never.
	LastFetchAgoMs    int64 `json:"last_fetch_ago_ms"`
	LastCaughtUpAgoMs int64 `json:"last_caught_up_ago_ms"`
}

// Ask probes every target at once, then every controller their answers
// name that was not a target (the voters' endpoints in the leader's
// DescribeQuorum, the registered controllers), and builds the report.
// staticVoters says the targets' ids are the whole voter set
// (controller.quorum.voters).
func Ask(ctx context.Context, targets []Target, staticVoters bool, opts Options) *Report {
	var views []listenerView
	var errs []error
	read := make(chan struct{})
	go func() { // beside the probes, so that it adds no time
		views, errs = readListeners(ctx, opts.MetricsURLs, opts.Timeout)
		close(read)
	}()
	probes := askAll(ctx, targets, opts)
	for _, p := range probes {
		p.given = true
	}
	seen := map[string]bool{}
	for _, t := range targets {
		seen[t.Addr] = true
	}
	// A follower names the leader (registered controllers), the leader
	// names the voters: two more rounds at most.
	for round, asked := 0, probes; round < 2; round++ {
		var more []Target
		for _, p := range asked {
			for _, a := range namedControllers(p) {
				if !seen[a.String()] {
					seen[a.String()] = true
					more = append(more, Target{ID: a.ID, Addr: a.String()})
				}
			}
		}
		asked = askAll(ctx, more, opts)
		probes = append(probes, asked...)
	}
	r := assemble(probes, staticVoters)
	<-read
	r.addListeners(views)
	for _, err := range errs {
		if err != nil {
			r.MetricsErrors = append(r.MetricsErrors, err.Error())
		}
	}
	r.Diagnosis = diagnose(r, opts.Limits)
	return r
}

func askAll(ctx context.Context, targets []Target, opts Options) []*Probe {
	out := make([]*Probe, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = ask(ctx, t, opts.Security, opts.Timeout)
		}()
	}
	wg.Wait()
	return out
}

// namedControllers are the controller endpoints an answer names.
func namedControllers(p *Probe) []Address {
	out := slices.Clone(p.registered)
	if p.knownLeader.Port != 0 {
		out = append(out, p.knownLeader)
	}
	for _, n := range p.nodes {
		// A voter's first listener only: the others may speak another
		// security protocol than this client's.
		if len(n.Listeners) > 0 {
			out = append(out, Address{ID: n.NodeID, Host: n.Listeners[0].Host, Port: int32(n.Listeners[0].Port)})
		}
	}
	return out
}

// assemble joins the probes: ids learnt from any answer, the leader's
// quorum, each controller's log end and lag, its role, and the voter set.
func assemble(probes []*Probe, staticVoters bool) *Report {
	r := &Report{LeaderID: -1, LeaderEpoch: -1, HighWatermark: -1, MetadataVersion: "unknown",
		Voters: []Replica{}, Observers: []Replica{}, Controllers: []Address{}, Probes: probes}
	nameProbes(probes)
	leader := leaderProbe(probes)
	if leader != nil {
		r.fillFromLeader(leader)
	} else {
		r.fillWithoutLeader(probes)
	}
	r.ClusterID = commonClusterID(probes, leader)
	r.VoterSource = "asked"
	switch {
	case leader != nil:
		r.VoterSource = "leader"
	case staticVoters:
		r.VoterSource = "config"
	}
	voters := map[int32]bool{}
	for _, v := range r.Voters {
		voters[v.ID] = true
	}
	for _, p := range probes {
		switch r.VoterSource {
		case "leader":
			p.Voter = voters[p.ID]
		case "config":
			p.Voter = p.given
		default:
			p.Voter = true
		}
		switch {
		case p.Role == "leader" || !p.Reachable || p.Epoch < 0:
		case p.LeaderID < 0:
			p.Role = "no-leader"
		case p.LeaderID == p.ID || p.ID < 0 && p.knownLeader.Port != 0 && p.knownLeader.String() == p.Address:
			p.Role = "leader"
		case !p.Voter:
			p.Role = "observer"
		default:
			p.Role = "follower"
		}
	}
	slices.SortFunc(probes, func(a, b *Probe) int {
		if c := cmp.Compare(uint32(a.ID), uint32(b.ID)); c != 0 { // unknown ids (-1) last
			return c
		}
		return cmp.Compare(a.Address, b.Address)
	})
	return r
}

// nameProbes gives a probe without an id the id that some answer gives
// its address.
func nameProbes(probes []*Probe) {
	ids := map[string]int32{}
	for _, p := range probes {
		for _, a := range namedControllers(p) {
			ids[a.String()] = a.ID
		}
	}
	for _, p := range probes {
		if id, ok := ids[p.Address]; ok && p.ID < 0 {
			p.ID = id
		}
	}
}

// leaderProbe is the controller that answered DescribeQuorum as leader,
// the one of the highest epoch if (briefly) two did.
func leaderProbe(probes []*Probe) *Probe {
	var leader *Probe
	for _, p := range probes {
		if p.quorum != nil && (leader == nil || p.Epoch > leader.Epoch) {
			leader = p
		}
	}
	return leader
}

func (r *Report) fillFromLeader(l *Probe) {
	q := l.quorum
	r.LeaderID, r.LeaderEpoch, r.HighWatermark = q.LeaderID, q.LeaderEpoch, q.HighWatermark
	r.MetadataVersion, r.KRaftVersion, r.Controllers = l.MetadataVersion, l.kraftVersion, append(r.Controllers, l.registered...)
	// The leader stamps its own entry with the time it answered.
	now, top := int64(-1), int64(-1)
	for _, v := range q.CurrentVoters {
		if v.ReplicaID == q.LeaderID {
			now = v.LastFetchTimestamp
		}
		top = max(top, v.LogEndOffset)
	}
	conv := func(in []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) []Replica {
		out := []Replica{}
		for _, v := range in {
			out = append(out, Replica{ID: v.ReplicaID, DirectoryID: uuidString(v.ReplicaDirectoryID), LogEndOffset: v.LogEndOffset,
				Lag: max(top-v.LogEndOffset, 0), LastFetchAgoMs: ago(now, v.LastFetchTimestamp), LastCaughtUpAgoMs: ago(now, v.LastCaughtUpTimestamp)})
		}
		return out
	}
	r.Voters, r.Observers = conv(q.CurrentVoters), conv(q.Observers)
	for _, p := range r.Probes {
		for _, v := range append(slices.Clone(r.Voters), r.Observers...) {
			if v.ID == p.ID && p.ID >= 0 {
				p.LogEndOffset, p.Lag, p.LastFetchAgoMs, p.LastCaughtUpAgoMs = v.LogEndOffset, v.Lag, v.LastFetchAgoMs, v.LastCaughtUpAgoMs
			}
		}
	}
}

// fillWithoutLeader takes what a leader would have said from the
// reachable controller with the most registrations.
func (r *Report) fillWithoutLeader(probes []*Probe) {
	var best *Probe
	for _, p := range probes {
		if p.Reachable && (best == nil || len(p.registered) > len(best.registered)) {
			best = p
		}
	}
	if best != nil {
		r.MetadataVersion, r.KRaftVersion, r.Controllers = best.MetadataVersion, best.kraftVersion, append(r.Controllers, best.registered...)
	}
}

// commonClusterID is the leader's cluster id, else the one most
// controllers answered.
func commonClusterID(probes []*Probe, leader *Probe) string {
	if leader != nil && leader.ClusterID != "" {
		return leader.ClusterID
	}
	count, best := map[string]int{}, ""
	for _, p := range probes {
		if p.ClusterID == "" {
			continue
		}
		count[p.ClusterID]++
		if n := count[p.ClusterID]; n > count[best] || n == count[best] && p.ClusterID < best {
			best = p.ClusterID
		}
	}
	return best
}

func ago(now, ts int64) int64 {
	if now < 0 || ts < 0 {
		return -1
	}
	return max(now-ts, 0)
}

func uuidString(id [16]byte) string {
	if id == [16]byte{} {
		return ""
	}
	return uuid.UUID(id).String()
}
