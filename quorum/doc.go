// Package quorum is KRaft consensus (KIP-595, KIP-630, KIP-996, KIP-853,
// KIP-1166) as a pure, deterministic state machine in the style of
// etcd-io/raft.
//
// It must never start goroutines, open sockets or files, or read the clock:
// time arrives through Tick, randomness from a seeded source in Config, and
// every effect leaves through Ready for the caller to persist, send and apply.
package quorum
