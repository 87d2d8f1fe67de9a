package embed

import (
	"time"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/peer"
)

// The node's published state, for metrics and readiness (the
// metrics.Source of the process): each method is safe from any goroutine.

// NodeID is this controller's node.id.
func (n *Node) NodeID() int32 { return n.cfg.NodeID }

// Applied is the offset of the last record replayed into the image.
func (n *Node) Applied() int64 { return n.ctl.Applied() }

// Cluster counts the committed image.
func (n *Node) Cluster() controller.ClusterStats { return n.ctl.Stats() }

// HeartbeatAges is, on the active controller, how long ago each broker's
// last heartbeat arrived.
func (n *Node) HeartbeatAges() map[int32]time.Duration { return n.ctl.HeartbeatAges() }

// TimedOutHeartbeats counts the brokers this node fenced, as the active
// controller, because their session expired.
func (n *Node) TimedOutHeartbeats() int64 { return n.timedOutHeartbeats.Load() }

// PeerTraffic is the raft client's traffic with each peer.
func (n *Node) PeerTraffic() map[int32]peer.Traffic { return n.peers.Traffic() }
