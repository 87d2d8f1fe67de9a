package node

import (
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/quorum"
)

// Transport carries the quorum core's requests to peers.
//
// Contract: Send never blocks on the network and never calls back into the
// Node; the answer, or the failure (quorum.ErrUnreachable, ErrTimeout, ...),
// comes back later through Node.StepPeer with the same reqID. MaxVersion
// reports the highest version of key the peer serves, from its ApiVersions,
// once known.
type Transport interface {
	Send(to int32, reqID uint64, req kmsg.Request)
	MaxVersion(peer int32, key int16) (int16, bool)
}

// Endpoints is a Transport that must be told where peers listen: the node
// tells it each voter set the quorum core acts on, as the set changes, and
// where a node outside the set listens before a request to it (the
// ApiVersions a leader sends a voter being added, quorum.Message.Endpoint).
type Endpoints interface {
	SetEndpoints(id int32, endpoints []quorum.Endpoint)
}

// Clock is the time the node acts on: the quorum core's ticks, snapshot
// timers and the timestamps written into snapshots.
type Clock interface {
	Now() time.Time
}

// Syncer fsyncs the log beside the loop for the leader's deferred syncs
// (quorum.Ready.SendFirst).
//
// Contract: at most one job runs at a time. Start hands a job over and
// returns at once; its result comes back later through Node.Synced. Wait
// blocks until the running job, if any, is done and returns its error; that
// job's result is then never delivered through Synced.
type Syncer interface {
	Start(job SyncJob)
	Wait() error
}

// Executor runs background work (writing a snapshot) at urgency and
// delivers its error on the returned channel, which receives exactly one
// value. Production runs the work on a goroutine of lower priority; the
// simulator runs it at once.
type Executor func(urgency Urgency, work func() error) <-chan error

// Urgency is how background work competes for a CPU with the node's own
// work (heartbeats, the quorum) and with the other processes of its host.
type Urgency int

const (
	// Yielding work goes after the node's own but keeps a tenth of its
	// weight: the active controller's snapshot, which observers catching
	// up may be sent to.
	Yielding Urgency = iota
	// Idle work goes after everything else on the host: a follower's
	// snapshot, which nothing waits for. Controllers that share a host
	// (a test, a small cluster) so leave the CPU to the leader's, rather
	// than three snapshots of the same offset splitting it.
	Idle
)

// StateMachine is what committed records are replayed into: the
// controller's image. It is called from the loop goroutine only.
type StateMachine interface {
	// Replay applies the committed record at offset; an error is logged and
	// replay goes on (the log is the truth).
	Replay(offset int64, rec metadata.Record) error
	// MarkApplied records that every record up to offset was replayed,
	// even where the last batches held only control records.
	MarkApplied(offset int64)
	// LoadSnapshot replaces the image with a snapshot's, whose last
	// contained offset is lastOffset.
	LoadSnapshot(lastOffset int64, im *metadata.Image)
	// Applied is the offset of the last replayed record, or -1.
	Applied() int64
	// FreezeImage returns a read-only copy of the image that stays as it
	// is while replay goes on (metadata.Image.Freeze), for the snapshot
	// writer to read on another goroutine, if the image holds exactly the
	// records up to lastOffset; else nil.
	FreezeImage(lastOffset int64) *metadata.Image
	// ActivationRecords are what a new leader writes once it has replayed
	// every record committed before its epoch (bootstrap feature levels on
	// an empty log), or nil.
	ActivationRecords() []metadata.Record
}

// Observer sees, on the loop goroutine and in order, what the loop did to
// the disk and the state machine. The simulator checks its invariants
// against it and keeps it as the trace of a failing seed; production leaves
// it nil. Implementations must not call back into the Node.
type Observer interface {
	// HardStateWritten: quorum-state is durable with hs.
	HardStateWritten(hs quorum.HardState)
	// Truncated: every batch at or after offset to is gone from the log.
	Truncated(to int64)
	// Appended: whole batches were written at the log end (not yet synced).
	Appended(batches []byte)
	// SnapshotInstalled: a snapshot fetched from the leader is frozen and
	// the log restarts after it.
	SnapshotInstalled(id quorum.SnapshotID)
	// Replayed: the state machine now holds every record below end.
	Replayed(end int64)
}

// Env is how a Node reaches the world.
type Env struct {
	Transport  Transport
	Clock      Clock
	Syncer     Syncer
	Background Executor
	// Rand drives the quorum core's random choices (election jitter,
	// bootstrap peer).
	Rand     *rand.Rand
	Observer Observer // nil: nobody watches
	Meter    Meter    // nil: nothing is measured
}

// BrokenRules break, on purpose, rules the runtime keeps, so that the
// simulator's self-tests can show its checker catches each. Production never
// sets any.
type BrokenRules struct {
	// SendBeforeHardState sends a Ready's messages before its quorum-state
	// is written (everything else it holds is persisted first, as usual).
	SendBeforeHardState bool
	// ReplayPastHighWatermark replays every record written, committed or
	// not.
	ReplayPastHighWatermark bool
	// CountUnsyncedLeaderCopy reports the leader's copy synced as soon as it
	// is written, before its fsync.
	CountUnsyncedLeaderCopy bool
	// AckBeforeCommit answers a proposal as soon as it is written.
	AckBeforeCommit bool
}
