package server

// FetchSnapshot: v0-1
//
// Version notes:
//   - v1: ReplicaDirectoryId, and NodeEndpoints in the response (KIP-853).
//
// The quorum answers it (see stepQuorum).

import "github.com/kraftd/kraftd/authz"

func init() {
	regKey(59, 0, 1, (*Server).stepQuorum,
		accessRule{name: "FetchSnapshot", cluster: authz.OpClusterAction})
}
