package server

// DescribeQuorum: v0-2
//
// Version notes:
//   - v1: LastFetchTimestamp and LastCaughtUpTimestamp (KIP-836).
//   - v2: ErrorMessage, ReplicaDirectoryId and Nodes (KIP-853).
//   - Only the leader answers; others say NOT_LEADER_OR_FOLLOWER.
//
// The quorum answers it (see stepQuorum).

import "github.com/kraftd/kraftd/authz"

func init() {
	regKey(55, 0, 2, (*Server).stepQuorum,
		accessRule{name: "DescribeQuorum", cluster: authz.OpDescribe})
}
