// Package controller is the cluster metadata state machine: broker and
// controller registrations, heartbeats and fencing, log directories, topics
// and partitions, leader and ISR changes, dynamic configs, features,
// producer ids, client quotas (quotas.go), SCRAM credentials (scram.go) and
// delegation tokens (tokens.go, whose lapsed tokens Tick removes).
//
// It has three parts.
//
// The committed side (controller.go) replays committed records into the
// metadata image; request handlers read it concurrently, under its lock.
//
// The Core (core.go, active.go, pipeline.go, timed.go) is the active
// controller as a deterministic state machine. It takes only explicit
// inputs, as Apache's QuorumController takes events from one queue:
// operations (a request, the time, and a callback for the answer), Tick
// (the timed work, with the time), SetQuorum (whether this node leads, in
// which epoch, and the quorum's kraft.version), and the log's
// notifications: that it took a write at an offset (stamp, before the
// write is encoded) and that the write committed, after replay, or failed
// (done). Its outputs are proposals (Log) and answers. It runs on the
// goroutine that replays, so its reads of the committed image never race
// replay.
//
// Each operation validates a request against the speculative image (the
// committed image plus the records of every write handed to the log and
// not yet committed, in log order), turns it into records, applies them to
// the speculative image and proposes them without waiting for the commit.
// So many operations may be in flight, each seeing the effects of those
// before it, and each is answered once its records commit, in commit
// order; an operation that writes nothing (a read, a refusal) is answered
// only once a write handed to the log after it was built has committed,
// the next operation's or a NoOp shared by all that wait (confirm.go): a
// leader cut off by a partition, not yet aware of its successor, so never
// answers from its stale image. A steady broker heartbeat and the core's
// timed work keep Apache's rule: answered once what they read has
// committed, with no write of their own. Records are proposed for the leader epoch
// they were built in, and the log refuses them once this node no longer
// leads that epoch, so the writes that reach the log are always a prefix
// of those made. When a write fails (leadership lost), the operations in
// flight fail with ErrNotController and the speculative image is rebuilt
// from the committed one once nothing is pending; so it is, too, when the
// committed log holds a record that is not the core's own. A registration
// that carries its own offset (a broker epoch) reaches the speculative
// image once the log has given it that offset. The first operation of a
// leader epoch first commits a NoOpRecord, so the image holds everything
// committed before the epoch; on a log without a metadata.version,
// operations fail with ErrNotController until the bootstrap records the
// node writes on election have committed, since no record may precede
// them. What would wait in a blocking design (that barrier, draining the
// pipeline before a rebuild, a registration's offset) is queued work,
// resumed by the notification it waits for. Broker sessions (sessions.go)
// are memory-only and restart with every epoch, as in Apache. On any node
// other than the leader, operations fail with ErrNotController.
//
// The blocking methods (wrapper.go) give request handlers the
// context-bound methods of Controller: each hands its input to the
// goroutine that owns the core through a Driver (the node's loop, whose
// seam, node/seam.go, drives the core in production and in the simulator
// alike) and waits for the answer. The controller holds no lock of its own
// around the core.
//
// What the Core must never do: block, start a goroutine, read the clock
// (every input brings its time), or use global randomness (replica
// placement draws from Settings.Rand, topic ids from Settings.TopicIDs).
// Then a simulator can run the real controller of every node on one
// goroutine from one seed, and the transcripts in testdata/*.txt
// (datadriven_test.go) can step it input by input over a log the script
// takes, commits and fails, printing each proposal and answer. Applying committed records must be
// deterministic too: it never reads the clock or does I/O; timestamps
// arrive inside records. Reads that need no leadership (DescribeConfigs,
// features, registrations) use the committed image.
//
// Apache's rules are followed where a broker or tool can tell the
// difference: registration and heartbeat state machine (brokers.go,
// sessions.go), partition leader election and ISR/ELR changes
// (partitions.go), striped replica placement (placement.go), topic and
// config validation (topics.go, configs.go), AlterPartition and
// ElectLeaders (alterpartition.go), partition reassignment (reassign.go),
// automatic preferred-leader balancing (balance.go), UpdateFeatures (features_update.go), failed and assigned
// log directories (logdirs.go).
package controller
