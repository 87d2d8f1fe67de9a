// Package controller is the cluster metadata state machine: broker and
// controller registrations, heartbeats and fencing, log directories, topics
// and partitions, leader and ISR changes, dynamic configs, features and
// producer ids.
//
// The committed side (controller.go) replays committed records into the
// metadata image; request handlers read it concurrently.
//
// The active side (active.go, pipeline.go) serves operations on the
// leader. Each operation validates a request against the speculative image
// (the committed image plus the records of every operation handed to the
// quorum and not yet committed, in log order), turns it into records,
// applies them to the speculative image and hands them to the quorum
// without waiting for the commit. So many operations may be in flight, each
// seeing the effects of those before it, and each is answered once its
// records commit, in commit order; an operation that writes nothing is
// answered once the writes it may have read have committed. Records are
// proposed for the leader epoch they were built in, and the node refuses
// them once it no longer leads that epoch, so the writes that reach the log
// are always a prefix of those made. When a write fails (leadership lost),
// the operations in flight fail with ErrNotController and the speculative
// image is rebuilt from the committed one once nothing is pending; so it
// is, too, should the leader replay a record that is not its own. A
// registration that carries its own offset (a broker epoch) reaches the
// speculative image once the log has given it that offset. The first
// operation of a leader epoch first commits a NoOpRecord, so the image
// holds everything committed before the epoch; on a log without a
// metadata.version, operations fail with ErrNotController until the
// bootstrap records the node writes on election have committed, since no
// record may precede them. Broker sessions (sessions.go) are memory-only
// and restart with every epoch, as in Apache. On any node other than the
// leader, operations fail with ErrNotController. Reads that need no
// leadership (DescribeConfigs, features, registrations) use the committed
// image.
//
// Apache's rules are followed where a broker or tool can tell the
// difference: registration and heartbeat state machine (brokers.go,
// sessions.go), partition leader election and ISR/ELR changes
// (partitions.go), striped replica placement (placement.go), topic and
// config validation (topics.go, configs.go), AlterPartition and
// ElectLeaders (alterpartition.go), automatic preferred-leader balancing
// (balance.go), UpdateFeatures (features_update.go), failed and assigned
// log directories (logdirs.go).
//
// Applying committed records must be deterministic: it never reads the clock
// or does I/O; timestamps arrive inside records. Only the active side reads
// the clock (Settings.Now), for broker sessions.
package controller
