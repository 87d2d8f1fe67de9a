package peer

import (
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errInconsistentClusterID is INCONSISTENT_CLUSTER_ID: the peer is of
// another cluster than the request said.
const errInconsistentClusterID int16 = 104

// Seen from a peer of another cluster, a mismatch counts for
// mismatchWindow after it was last seen, and is logged again at most once
// per mismatchLogEvery: a follower of the wrong cluster asks several times
// a second.
const (
	mismatchWindow   = 30 * time.Second
	mismatchLogEvery = time.Minute
)

// ClusterMismatch is a peer seen, within the last 30 s, with a
// cluster id other than this node's.
type ClusterMismatch struct {
	// Peer is the peer's node id; negative for a bootstrap server, which
	// is asked before its id is known.
	Peer int32
	// Addr is where this node reached the peer, or where the peer's
	// request came from.
	Addr string
	// ClusterID is the id the peer's request carried; "" when the peer
	// only refused this node's requests.
	ClusterID string
	// Refused: the peer answered this node's request with
	// INCONSISTENT_CLUSTER_ID.
	Refused bool
	// AgeMs is how long ago it was last seen.
	AgeMs int64
}

// Clusters remembers the peers seen with another cluster id, in either
// direction, and logs each at error level (rate-limited per peer and
// direction). Apache 4.4.0's asked controller answers them
// INCONSISTENT_CLUSTER_ID and logs nothing, and the asking one logs an
// error at every answer, about 20 a second.
type Clusters struct {
	own string
	log zerolog.Logger
	now func() time.Time

	mu   sync.Mutex
	seen map[peerDirection]*peerSeen
}

type peerDirection struct {
	peer    int32
	refused bool
}

type peerSeen struct {
	addr, clusterID string
	at, logged      time.Time
}

func NewClusters(own string, log zerolog.Logger) *Clusters {
	return &Clusters{own: own, log: log, now: time.Now, seen: map[peerDirection]*peerSeen{}}
}

// NoteRequest checks the cluster id of a raft request this node serves.
func (p *Clusters) NoteRequest(body kmsg.Request, remote string) {
	id, from := raftRequestCluster(body)
	if id == nil || *id == p.own {
		return
	}
	if p.note(peerDirection{peer: from}, remote, *id) {
		p.log.Error().Int32("peer", from).Str("addr", remote).Str("peer_cluster_id", *id).Str("cluster_id", p.own).
			Str("api", kmsg.NameForKey(body.Key())).
			Msg("a peer of another cluster asks this node (answered INCONSISTENT_CLUSTER_ID): its directory was formatted " +
				"with another cluster id, or its controller.quorum.voters or bootstrap.servers point at the wrong quorum")
	}
}

// NoteResponse checks a peer's answer to this node's raft request.
func (p *Clusters) NoteResponse(peer int32, addr string, resp kmsg.Response) {
	if raftResponseError(resp) != errInconsistentClusterID {
		return
	}
	if p.note(peerDirection{peer: peer, refused: true}, addr, "") {
		p.log.Error().Int32("peer", peer).Str("addr", addr).Str("cluster_id", p.own).Str("api", kmsg.NameForKey(resp.Key())).
			Msg("a peer answers INCONSISTENT_CLUSTER_ID: it is of another cluster than this node; this node's directory " +
				"was formatted with another cluster id than its quorum's, or controller.quorum.voters or bootstrap.servers " +
				"point at the wrong quorum")
	}
}

// note records a sighting and reports whether to log it.
func (p *Clusters) note(key peerDirection, addr, clusterID string) bool {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.seen[key]
	if s == nil {
		s = &peerSeen{}
		p.seen[key] = s
	}
	s.addr, s.clusterID, s.at = addr, clusterID, now
	if now.Sub(s.logged) < mismatchLogEvery {
		return false
	}
	s.logged = now
	return true
}

// mismatches lists the sightings of the last mismatchWindow, by peer.
func (p *Clusters) Mismatches() []ClusterMismatch {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []ClusterMismatch
	for key, s := range p.seen {
		if age := now.Sub(s.at); age <= mismatchWindow {
			out = append(out, ClusterMismatch{Peer: key.peer, Addr: s.addr, ClusterID: s.clusterID, Refused: key.refused, AgeMs: age.Milliseconds()})
		}
	}
	slices.SortFunc(out, func(a, b ClusterMismatch) int { return int(a.Peer - b.Peer) })
	return out
}

// raftRequestCluster is the cluster id a raft request carries (nil when
// it carries none) and the node that sent it.
func raftRequestCluster(body kmsg.Request) (*string, int32) {
	switch r := body.(type) {
	case *kmsg.FetchRequest:
		if r.Version >= 15 {
			return r.ClusterID, r.ReplicaState.ID
		}
		return r.ClusterID, r.ReplicaID
	case *kmsg.FetchSnapshotRequest:
		return r.ClusterID, r.ReplicaID
	case *kmsg.VoteRequest:
		if len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 {
			return r.ClusterID, r.Topics[0].Partitions[0].CandidateID
		}
		return r.ClusterID, -1
	case *kmsg.BeginQuorumEpochRequest:
		if len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 {
			return r.ClusterID, r.Topics[0].Partitions[0].LeaderID
		}
		return r.ClusterID, -1
	case *kmsg.EndQuorumEpochRequest:
		if len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 {
			return r.ClusterID, r.Topics[0].Partitions[0].LeaderID
		}
		return r.ClusterID, -1
	}
	return nil, -1
}

// raftResponseError is the top-level error code of a raft response.
func raftResponseError(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.FetchResponse:
		return r.ErrorCode
	case *kmsg.FetchSnapshotResponse:
		return r.ErrorCode
	case *kmsg.VoteResponse:
		return r.ErrorCode
	case *kmsg.BeginQuorumEpochResponse:
		return r.ErrorCode
	case *kmsg.EndQuorumEpochResponse:
		return r.ErrorCode
	}
	return 0
}
