// Package peer is kraftd's outbound client for peer RPCs: the requests a
// controller sends its quorum's other voters and observers (Vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, AddRaftVoter,
// ...). It keeps one connection per peer with one request in flight, as
// Apache's raft client does, negotiates versions with ApiVersions, runs
// the controller listener's TLS handshake and SASL login that its caller
// gives it, looks each host name up anew at every connection attempt
// (dial.go), and notes the peers of another cluster id on either side
// (clusters.go) for the log, a metric and readiness.
//
// It words failures for the quorum core (quorum.ErrPeerGone for a
// connection the peer's host refused or closed, quorum.ErrTimeout for a
// deadline) and must never decide anything itself: it holds no consensus
// state, and never imports the wire server.
package peer
