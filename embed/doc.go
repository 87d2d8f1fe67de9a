// Package embed assembles one kraftd controller node, as etcd's package of
// that name does: the node runtime (package node) driven by its production
// Runner over the opened metadata directory, the peer client (package peer)
// it sends through, with the controller listener's TLS and SASL, and the
// controller its committed records replay into, whose core it gives to the
// node's seam (which runs the core's inputs and timed work on the loop,
// node/seam.go), and this controller's registration with its leader. The
// Node it builds is the Backend the wire server (package server) answers
// requests from, and the metrics.Source of the process. `kraftd format`
// asks controllers which cluster they serve through it (ProbeClusters,
// probe.go).
//
// It owns wiring only: it must never answer a request itself (package
// server does), decide consensus (quorum) or cluster state (controller).
// Package server must never import it.
package embed
