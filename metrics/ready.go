package metrics

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kraftd/kraftd/peer"
	"github.com/kraftd/kraftd/quorum"
)

// readyRule says in a sentence when a node is ready (the help of
// kraftd_ready and the doc of Readiness).
const readyRule = "a leader of the current epoch is known and was heard from within the contact bound " +
	"(a leader: a majority of voters fetched within it), and, off the leader, the image is within the lag bound of the high watermark"

// ReadyBounds are how stale a node may be and still be ready.
type ReadyBounds struct {
	// MaxContactAgeMs bounds how long ago the leader was last heard from
	// (on the leader: since a majority of the voters fetched).
	MaxContactAgeMs int64
	// MaxLagRecords bounds, off the leader, how many committed records the
	// image may not hold yet.
	MaxLagRecords int64
}

// Readiness is the /readyz answer: whether the node is ready and why, with
// the facts the decision read.
type Readiness struct {
	Ready    bool   `json:"ready"`
	Reason   string `json:"reason"`
	NodeID   int32  `json:"node_id"`
	Role     string `json:"role"`
	Epoch    int32  `json:"epoch"`
	LeaderID int32  `json:"leader_id"`
	// HighWatermark and Applied: the commit point this node knows and the
	// offset after the last record its image holds.
	HighWatermark int64 `json:"high_watermark"`
	AppliedEnd    int64 `json:"applied_end"`
	// LeaderContactAgeMs is how long ago the leader was last heard from
	// (Status.LeaderContactMs), -1 when never.
	LeaderContactAgeMs int64 `json:"leader_contact_age_ms"`
	// PeersOfAnotherCluster counts the peers seen in the last 30 s with
	// another cluster id (peer.ClusterMismatch).
	PeersOfAnotherCluster int `json:"peers_of_another_cluster"`
	// Unresolved holds the peers whose host name did not resolve at the
	// last attempt, with the reason, by node id.
	Unresolved map[int32]string `json:"unresolved_peers,omitempty"`
}

// withPeerProblems adds what r's node knows of its peers: the peers of
// another cluster and the peers whose host name does not resolve, and,
// when r is not ready, the one most likely why: a controller that refused
// this node as of another cluster (its directory was formatted with
// another cluster id than its quorum's), or a leader (with no leader, any
// peer) whose name does not resolve. Neither makes a node with a working
// quorum unready: a stray node of another cluster that asks this one must
// not take a healthy quorum out of service, nor must a voter that is gone
// from DNS while a majority is up.
func withPeerProblems(r Readiness, st quorum.Status, mismatches []peer.ClusterMismatch, unresolved map[int32]string) Readiness {
	r.PeersOfAnotherCluster, r.Unresolved = len(mismatches), unresolved
	if r.Ready {
		return r
	}
	for _, m := range mismatches {
		if m.Refused {
			r.Reason += fmt.Sprintf("; the controller at %s answers INCONSISTENT_CLUSTER_ID: it is of another cluster than this node", m.Addr)
			return r
		}
	}
	if why, ok := unresolved[st.LeaderID]; ok {
		r.Reason += fmt.Sprintf("; the host name of leader %d does not resolve (%s)", st.LeaderID, why)
		return r
	}
	if st.LeaderID < 0 {
		for _, id := range slices.Sorted(maps.Keys(unresolved)) {
			r.Reason += fmt.Sprintf("; the host name of controller %d does not resolve (%s)", id, unresolved[id])
			break
		}
	}
	return r
}

// judgeReadiness decides readiness from a published status, the image's
// position and the time now (ms on the core's clock, the wall clock in
// production). A wedged loop publishes nothing new, so its contact ages
// and it turns not ready.
func judgeReadiness(self int32, st quorum.Status, applied, nowMs int64, b ReadyBounds) Readiness {
	r := Readiness{NodeID: self, Role: apacheState(st.SoftState), Epoch: st.Epoch, LeaderID: st.LeaderID,
		HighWatermark: st.HighWatermark, AppliedEnd: applied + 1, LeaderContactAgeMs: -1}
	if st.LeaderContactMs >= 0 {
		r.LeaderContactAgeMs = max(nowMs-st.LeaderContactMs, 0)
	}
	switch {
	case st.Role != quorum.RoleLeader && st.Role != quorum.RoleFollower || st.LeaderID < 0:
		r.Reason = fmt.Sprintf("no leader known in epoch %d (%s)", st.Epoch, r.Role)
	case st.LeaderContactMs < 0:
		r.Reason = fmt.Sprintf("leader %d of epoch %d has not been heard from yet", st.LeaderID, st.Epoch)
	case st.Role == quorum.RoleLeader && r.LeaderContactAgeMs > b.MaxContactAgeMs:
		r.Reason = fmt.Sprintf("leader of epoch %d, but no majority of the %d voters fetched in the last %d ms (last %d ms ago)",
			st.Epoch, len(st.Voters), b.MaxContactAgeMs, r.LeaderContactAgeMs)
	case st.Role == quorum.RoleLeader && !st.EpochCommitted:
		r.Reason = fmt.Sprintf("leader of epoch %d, but nothing of the epoch has committed yet", st.Epoch)
	case st.Role == quorum.RoleLeader:
		r.Ready = true
		r.Reason = fmt.Sprintf("leader of epoch %d; a majority of the %d voters fetched %d ms ago", st.Epoch, len(st.Voters), r.LeaderContactAgeMs)
	case r.LeaderContactAgeMs > b.MaxContactAgeMs:
		r.Reason = fmt.Sprintf("%s of leader %d in epoch %d, but the leader was last heard from %d ms ago (bound %d ms)",
			r.Role, st.LeaderID, st.Epoch, r.LeaderContactAgeMs, b.MaxContactAgeMs)
	case st.HighWatermark < 0:
		r.Reason = fmt.Sprintf("%s of leader %d in epoch %d, but the high watermark is not known yet", r.Role, st.LeaderID, st.Epoch)
	case st.HighWatermark-(applied+1) > b.MaxLagRecords:
		r.Reason = fmt.Sprintf("%s of leader %d in epoch %d, but the image is %d records behind the high watermark %d (bound %d)",
			r.Role, st.LeaderID, st.Epoch, st.HighWatermark-(applied+1), st.HighWatermark, b.MaxLagRecords)
	default:
		r.Ready = true
		r.Reason = fmt.Sprintf("%s of leader %d in epoch %d, heard from %d ms ago, image %d records behind the high watermark",
			r.Role, st.LeaderID, st.Epoch, r.LeaderContactAgeMs, max(st.HighWatermark-(applied+1), 0))
	}
	return r
}
