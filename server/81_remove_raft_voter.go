package server

// RemoveRaftVoter: v0
//
// Version notes:
//   - v0: KIP-853. Only the quorum leader takes it, at kraft.version 1; the
//     answer waits for the VotersRecord to commit, and a leader that removed
//     itself resigns then.
//
// The quorum answers it (see stepQuorum, and quorum/reconfig.go).

import "github.com/kraftd/kraftd/authz"

func init() {
	regKey(81, 0, 0, (*Server).stepQuorum,
		accessRule{name: "RemoveRaftVoter", cluster: authz.OpAlter})
}
