// Package node is the runtime of one kraftd controller: the one Ready loop
// of the repository. It turns the pure quorum core's decisions into effects,
// in an order that keeps every acknowledgement behind the durability it
// depends on:
//
//  1. quorum-state (written and fsynced before any message that depends on
//     it leaves);
//  2. a snapshot chunk fetched from the leader, a truncation, an append;
//  3. the fsync the Ready asks for (a leader's may run beside the loop, see
//     syncer.go);
//  4. messages: answers to waiting requests, requests to peers (a leader's
//     Ready marked SendFirst leaves before step 1);
//  5. Advance; then replay of newly committed records into the state
//     machine (the controller), answers to proposals whose records
//     committed, activation of a new leader, and the snapshot policy;
//     then the controller core's new proposals.
//
// The controller's active core runs on the same loop, driven by one
// adapter, Seam (seam.go), in production and in the simulator alike: the
// seam gives the core its inputs (operations with the node's time, the
// timed work every 100 ms, the quorum's role, epoch and kraft.version,
// the stamp and outcome of each proposal) and hands its proposals to
// Propose once each input has returned.
//
// It reaches the world only through the interfaces of env.go: the disk
// (storage.Log over storage.FS, opened by Disk), a Transport for peers
// (told where voters, bootstrap servers and a leader outside the voter set
// listen when it implements Endpoints), a
// Clock, a Syncer for the leader's deferred fsyncs, an Executor for
// background work, and an Observer that sees what the loop did. Production
// drives a Node with Runner (goroutines, channels, the wall clock); the
// simulator (node/sim) drives the same Node from one goroutine over MemFS.
//
// Start-up (OpenDisk) refuses a directory it must not run from, saying
// what to do: an unformatted or lost log, a corrupt closed segment, and a
// quorum-state at the last epoch (epoch_check.go).
//
// A Node must never open a socket, read the wall clock or global randomness,
// or start a goroutine of its own; every method but Status and the
// constructors is for the one goroutine that drives it, and so is the
// controller core its seam drives.
package node
