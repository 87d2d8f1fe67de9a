package server

// Fetch: v4-18
//
// Version notes:
//   - v12: flexible; LastFetchedEpoch, DivergingEpoch, CurrentLeader, SnapshotId.
//   - v13: topic ids replace topic names (the metadata topic id is Uuid(0,1)).
//   - v15: ReplicaState replaces ReplicaId.
//   - v16: NodeEndpoints in the response (filled by the quorum leader from v17).
//   - v17: ReplicaDirectoryId (KIP-853).
//   - v18: HighWatermark in the request (KIP-1166): a fetcher behind the
//     leader's high watermark is answered at once.
//
// The quorum answers it (see stepQuorum).

import "github.com/kraftd/kraftd/authz"

func init() {
	regKey(1, 4, 18, (*Server).stepQuorum,
		accessRule{name: "Fetch", cluster: authz.OpClusterAction})
}
