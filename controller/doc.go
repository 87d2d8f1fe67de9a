// Package controller is the cluster metadata state machine: broker and
// controller registrations, heartbeats and fencing, topics and partitions,
// leader and ISR changes, dynamic configs, features and producer ids.
//
// The committed side (controller.go) replays committed records into the
// metadata image; request handlers read it concurrently.
//
// The active side (active.go) serves operations on the leader. Each
// operation validates a request against the image, turns it into records,
// proposes them through the Quorum and answers once they commit; operations
// run one at a time, so each sees the effects of the one before. The first
// operation of a leader epoch first commits a NoOpRecord, so the image holds
// everything committed before the epoch; on a log without a
// metadata.version, operations fail with ErrNotController until the
// bootstrap records the node writes on election have committed, since no
// record may precede them. Broker sessions (sessions.go) are
// memory-only and restart with every epoch, as in Apache. On any node other
// than the leader, operations fail with ErrNotController.
//
// Apache's rules are followed where a broker or tool can tell the
// difference: registration and heartbeat state machine (brokers.go,
// sessions.go), partition leader election and ISR/ELR changes
// (partitions.go), striped replica placement (placement.go), topic and
// config validation (topics.go, configs.go), AlterPartition and
// ElectLeaders (alterpartition.go), UpdateFeatures (features_update.go).
//
// Applying committed records must be deterministic: it never reads the clock
// or does I/O; timestamps arrive inside records. Only the active side reads
// the clock (Settings.Now), for broker sessions.
package controller
