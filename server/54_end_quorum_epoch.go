package server

// EndQuorumEpoch: v0-1
//
// Version notes:
//   - v1: PreferredCandidates with directory ids replace
//     PreferredSuccessors; LeaderEndpoints (KIP-853).
//
// The quorum answers it (see stepQuorum).

import "github.com/kraftd/kraftd/authz"

func init() {
	regKey(54, 0, 1, (*Server).stepQuorum,
		accessRule{name: "EndQuorumEpoch", cluster: authz.OpClusterAction})
}
