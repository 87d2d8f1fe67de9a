// Package server is kraftd's wire: it owns listeners, connections and
// their goroutines. It decodes frames with package protocol, dispatches
// them to one handler per API key (files named NN_api_name.go, each
// registering its key's version range and access rule and holding its
// refusals; authorize.go checks the rule before the handler runs), hands
// each request to its Backend (the node that package embed assembles: the
// runtime whose one Ready loop lives in package node, and the controller),
// and keeps each connection's responses in request order, writing a
// FetchSnapshot chunk from the snapshot file to the socket
// (node.SnapshotChunk) rather than through memory. It reads the node's
// configuration from server.properties (Config, config*.go).
//
// It runs connection security on the wire, with packages security/tls
// (stores, handshakes) and security/sasl (the exchange's rules,
// mechanisms, failure bounds) doing the work: the TLS handshake comes
// before any request is read (conn_secure.go), the SASL exchange before
// any other request on a SASL listener (sasl_auth.go, sasl_reauth.go:
// sasl.Conversation decides, the wire reads and writes), and each
// connection carries its principal (ANONYMOUS, the mapped DN of a client
// certificate, or the SASL user) for authorization to use. The ssl.* and sasl.* keys are read
// in config_tls.go and config_sasl.go, and Config.PeerSecurity gives the
// peer client (package peer) the controller listener's TLS handshake and
// SASL mechanism. It bounds what strangers can make
// it do there: a failed login's answer is held on a timer
// (connection.failed.authentication.delay.ms) and failures are bounded per
// address and principal (sasl.FailureLimits); the log lines bad
// connections cause are rate-limited (log_limit.go).
//
// It owns the node's own log level too (BROKER_LOGGER configs of this
// node's id), which is process state, never metadata.
//
// It owns the bounds on what clients make the node hold: connections, and
// one node-wide memory budget (queued.max.request.bytes, limits.go) for
// requests read, decoded and handled and answers not yet written; past
// it, it stops reading from connections rather than allocating more.
//
// It must never hold consensus or cluster state of its own: that lives in
// packages quorum and controller. A request that waits (a parked Fetch) must
// never hold up another connection. It must never import package embed,
// which builds on it.
package server
