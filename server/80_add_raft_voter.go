package server

// AddRaftVoter: v0-1
//
// Version notes:
//   - v0: KIP-853. Only the quorum leader takes it, at kraft.version 1.
//   - v1: AckWhenCommitted (KAFKA-19400): false answers once the
//     VotersRecord is appended instead of once it commits; v0 always waits.
//
// The quorum answers it (see stepQuorum, and quorum/reconfig.go for the
// rules): it asks the new voter's ApiVersions, on the endpoint the request
// gives, before it writes the record.

import "github.com/kraftd/kraftd/authz"

func init() {
	regKey(80, 0, 1, (*Server).stepQuorum,
		accessRule{name: "AddRaftVoter", cluster: authz.OpAlter})
}
