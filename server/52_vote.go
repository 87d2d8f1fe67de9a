package server

// Vote: v0-2
//
// Version notes:
//   - v1: VoterId and directory ids (KIP-853); VoterId is the receiver's id.
//   - v2: PreVote (KIP-996). The response has no PreVote field: the
//     receiver of a response knows from its own state which kind it asked.
//
// The quorum answers it (see stepQuorum).

import "github.com/kraftd/kraftd/authz"

func init() {
	regKey(52, 0, 2, (*Server).stepQuorum,
		accessRule{name: "Vote", cluster: authz.OpClusterAction})
}
