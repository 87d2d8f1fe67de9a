package server

// UpdateRaftVoter: v0
//
// Version notes:
//   - v0: KIP-853. A voter sends it to each new leader with its listeners
//     and kraft.version range; the response's CurrentLeader names the
//     leader (and its endpoint) as the receiver knows it. At kraft.version
//     0 the leader keeps the update in memory only.
//
// The quorum answers it (see stepQuorum, and quorum/reconfig.go).

import "github.com/kraftd/kraftd/authz"

func init() {
	regKey(82, 0, 0, (*Server).stepQuorum,
		accessRule{name: "UpdateRaftVoter", cluster: authz.OpClusterAction})
}
