package server

// BeginQuorumEpoch: v0-1
//
// Version notes:
//   - v1: flexible; VoterId, VoterDirectoryId, LeaderEndpoints (KIP-853).
//
// The quorum answers it (see stepQuorum).

import "github.com/kraftd/kraftd/authz"

func init() {
	regKey(53, 0, 1, (*Server).stepQuorum,
		accessRule{name: "BeginQuorumEpoch", cluster: authz.OpClusterAction})
}
