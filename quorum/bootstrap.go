// bootstrap.go owns how a node finds a leader it does not know:
// controller.quorum.bootstrap.servers (or the voters, for a static quorum),
// and the leader endpoints Fetch and FetchSnapshot answers carry, so that an observer outside
// every voter set it knows can reach the leader it learns of.

package quorum

// BootstrapID is the peer id the core gives Config.BootstrapServers[i].
// As in Apache, they count down from -2: -1 is "no node" everywhere in the
// protocol.
func BootstrapID(i int) int32 { return -2 - int32(i) }

// bootstrapIndex is the index into Config.BootstrapServers of peer id, or
// -1 when id is not a bootstrap server.
func (n *Node) bootstrapIndex(id int32) int {
	i := int(-2 - id)
	if id > -2 || i >= len(n.cfg.BootstrapServers) {
		return -1
	}
	return i
}

// bootstrapPeers are the peers a node that knows no leader asks. Apache
// asks the bootstrap servers whenever they are configured, voter or not;
// only a static quorum asks its voters.
func (n *Node) bootstrapPeers() []int32 {
	if len(n.cfg.BootstrapServers) == 0 {
		return n.voters
	}
	ids := make([]int32, len(n.cfg.BootstrapServers))
	for i := range ids {
		ids[i] = BootstrapID(i)
	}
	return ids
}

// peerEndpoint is where the shell should send to peer when it cannot know
// from the voter set: a bootstrap server, or a leader outside the voter set
// (the set an observer holds may not name it yet, or at all before the
// observer's first snapshot). Nil for a voter.
func (n *Node) peerEndpoint(peer int32) *Endpoint {
	if i := n.bootstrapIndex(peer); i >= 0 {
		ep := n.cfg.BootstrapServers[i]
		return &ep
	}
	if _, ok := n.voterSet.Get(peer); ok {
		return nil
	}
	if ep, ok := n.leaderEndpoints[peer]; ok {
		return &ep
	}
	return nil
}

// learnLeaderEndpoint keeps the leader's endpoint from the NodeEndpoints
// of a Fetch or FetchSnapshot answer, for peerEndpoint, and reports whether it was one. Only
// the newest leader's is kept.
func (n *Node) learnLeaderEndpoint(leader int32, id int32, host string, port int32) bool {
	if leader < 0 || id != leader || port <= 0 || port > 65535 {
		return false
	}
	// Unnamed: the answer came on the controller listener the shell sends
	// on, whatever the leader calls it.
	n.leaderEndpoints = map[int32]Endpoint{leader: {Host: host, Port: uint16(port)}}
	return true
}
