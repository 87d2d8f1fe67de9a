package health

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Limits say when a reachable voter counts as lagging behind the leader.
type Limits struct {
	// MaxLag is how many records behind the highest log end offset a
	// voter may be.
	MaxLag int64
	// MaxFetchAge is how long ago a voter may have last fetched from the
	// leader.
	MaxFetchAge time.Duration
}

// The states of a Diagnosis, and the exit codes `kraftd status` gives them.
const (
	Healthy  = "healthy"  // exit 0
	Degraded = "degraded" // exit 1: a voter down, lagging or of another cluster
	Down     = "down"     // exit 2: no leader, or no majority of voters reachable
)

// Diagnosis is the quorum's state in one line, and the problems behind it,
// worst first.
type Diagnosis struct {
	State    string    `json:"state"`
	ExitCode int       `json:"exit_code"`
	Summary  string    `json:"summary"`
	Problems []Problem `json:"problems"`
}

// Problem is one thing wrong. Kind is one of no_majority, no_leader,
// split_cluster_ids, voter_down, voter_lagging.
type Problem struct {
	Kind string `json:"kind"`
	// Node is the voter concerned, -1 for the whole quorum.
	Node   int32  `json:"node"`
	Detail string `json:"detail"`
}

// diagnose reads r: down without a reachable majority of voters or
// without a leader; degraded when a voter is down, answers for another
// cluster, or lags; else healthy.
func diagnose(r *Report, lim Limits) Diagnosis {
	d := Diagnosis{Problems: []Problem{}}
	voters := r.voterSet()
	up, foreign := 0, []Problem{}
	var down []string
	var downProblems []Problem
	for _, v := range voters {
		p := v.probe
		switch {
		case p == nil:
			down = append(down, fmt.Sprint(v.id))
			downProblems = append(downProblems, Problem{"voter_down", v.id, fmt.Sprintf("voter %d is down: no answer names its address", v.id)})
		case !p.Reachable:
			down = append(down, nodeName(p))
			downProblems = append(downProblems, Problem{"voter_down", v.id, fmt.Sprintf("voter %s is down: %s", nodeName(p), p.Error)})
		case r.foreign(p):
			down = append(down, nodeName(p))
		default:
			up++
		}
	}
	// Any controller asked, voter or not, may be of another cluster: a
	// node formatted with another cluster id, or an address of another
	// quorum.
	for _, p := range r.Probes {
		if p.Reachable && r.foreign(p) {
			role := "controller"
			if p.Voter {
				role = "voter"
			}
			foreign = append(foreign, Problem{"split_cluster_ids", p.ID, fmt.Sprintf("split cluster ids: %s %s answers for cluster %s, the quorum is %s",
				role, nodeName(p), p.ClusterID, r.ClusterID)})
		}
	}
	if n := len(voters); n == 0 || up <= n/2 {
		d.Problems = append(d.Problems, Problem{"no_majority", -1, fmt.Sprintf("no majority reachable: %d of %d voters answer (down: %s)",
			up, n, orNone(down))})
	}
	if r.LeaderID < 0 {
		d.Problems = append(d.Problems, Problem{"no_leader", -1, noLeaderText(r)})
	}
	d.Problems = append(d.Problems, foreign...)
	d.Problems = append(d.Problems, downProblems...)
	d.Problems = append(d.Problems, r.lagging(voters, lim)...)
	d.State, d.ExitCode = Healthy, 0
	for _, p := range d.Problems {
		switch p.Kind {
		case "no_majority", "no_leader":
			d.State, d.ExitCode = Down, 2
		default:
			if d.ExitCode == 0 {
				d.State, d.ExitCode = Degraded, 1
			}
		}
	}
	if len(d.Problems) == 0 {
		d.Summary = fmt.Sprintf("healthy: leader %d in epoch %d, %d of %d voters up", r.LeaderID, r.LeaderEpoch, up, len(voters))
		return d
	}
	var texts []string
	for _, p := range d.Problems {
		// No majority already names the voters down.
		if p.Kind != "voter_down" || d.Problems[0].Kind != "no_majority" {
			texts = append(texts, p.Detail)
		}
	}
	d.Summary = d.State + ": " + strings.Join(texts, "; ")
	return d
}

// noLeaderText says which leader, if any, the controllers still follow,
// and for how long none was heard from when metrics listeners say.
func noLeaderText(r *Report) string {
	var follows []string
	contact := int64(-1)
	for _, p := range r.Probes {
		if p.Reachable && p.LeaderID >= 0 {
			follows = append(follows, fmt.Sprintf("%s follows %d in epoch %d", nodeName(p), p.LeaderID, p.Epoch))
		}
		if a := p.LeaderContactAgeMs; a >= 0 && (contact < 0 || a < contact) {
			contact = a
		}
	}
	heard := ""
	if contact >= 0 {
		heard = fmt.Sprintf(", none heard from for %.1f s", float64(contact)/1000)
	}
	if len(follows) == 0 {
		return "no leader" + heard + ": no controller that answers knows one"
	}
	return "no leader answers" + heard + ": " + strings.Join(follows, ", ")
}

// foreign is whether p answered for another cluster than the quorum's.
func (r *Report) foreign(p *Probe) bool {
	return p.ClusterID != "" && r.ClusterID != "" && p.ClusterID != r.ClusterID
}

func (r *Report) lagging(voters []voter, lim Limits) []Problem {
	var out []Problem
	for _, v := range voters {
		p := v.probe
		if p == nil || !p.Reachable || v.id == r.LeaderID || p.Lag < 0 {
			continue
		}
		if p.Lag > lim.MaxLag || p.LastFetchAgoMs < 0 || p.LastFetchAgoMs > lim.MaxFetchAge.Milliseconds() {
			out = append(out, Problem{"voter_lagging", v.id, fmt.Sprintf("voter %s is far behind: %d records, last fetch %s",
				nodeName(p), p.Lag, AgoText(p.LastFetchAgoMs))})
		}
	}
	return out
}

// voter is one member of the voter set and its answer (nil: none).
type voter struct {
	id    int32
	probe *Probe
}

// voterSet is the voter set by VoterSource: the leader's voters, else
// each voter probe once per id (a probe of unknown id stands alone).
func (r *Report) voterSet() []voter {
	var out []voter
	if r.VoterSource == "leader" {
		for _, v := range r.Voters {
			out = append(out, voter{v.ID, r.probeOf(v.ID)})
		}
		return out
	}
	for _, p := range r.Probes {
		known := slices.ContainsFunc(out, func(v voter) bool { return v.id == p.ID })
		if p.Voter && (p.ID < 0 || !known) {
			out = append(out, voter{p.ID, r.probeOf(p.ID)})
			if p.ID < 0 {
				out[len(out)-1].probe = p
			}
		}
	}
	return out
}

// probeOf is the answer of controller id: a reachable one if any address
// of it answered.
func (r *Report) probeOf(id int32) *Probe {
	var found *Probe
	for _, p := range r.Probes {
		if p.ID == id && (found == nil || p.Reachable && !found.Reachable) {
			found = p
		}
	}
	return found
}

func nodeName(p *Probe) string {
	if p.ID >= 0 {
		return fmt.Sprintf("%d (%s)", p.ID, p.Address)
	}
	return p.Address
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// AgoText is a duration before the leader's answer, in words.
func AgoText(ms int64) string {
	if ms < 0 {
		return "never"
	}
	return fmt.Sprintf("%d ms ago", ms)
}
