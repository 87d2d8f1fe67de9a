// types.go owns the package's public types: the Log interface, HardState,
// SoftState, Role, Message, Ready, Config and the sentinel errors.

package quorum

import (
	"errors"
	"math/rand/v2"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// MetadataTopic is the name of the single KRaft partition's topic; its
// partition is always 0.
const MetadataTopic = "__cluster_metadata"

// MetadataTopicID is the fixed topic id of __cluster_metadata, Uuid(0, 1).
var MetadataTopicID = [16]byte{15: 1}

// Sentinel errors. Protocol-level failures are error codes inside responses;
// these are returned to the local caller only.
var (
	// ErrNotLeader is returned by Propose when this node is not the leader.
	ErrNotLeader = errors.New("quorum: not the leader")
	// ErrUnreachable reports (through Message.Err) that a request could not
	// be delivered to its peer.
	ErrUnreachable = errors.New("quorum: peer unreachable")
	// ErrTimeout reports (through Message.Err) that a request got no answer.
	ErrTimeout = errors.New("quorum: request timed out")
	// ErrPeerGone reports (through Message.Err) that the peer's host
	// refused the connection, reset it or closed it: what a kernel does
	// when the process behind the socket has died. A timeout, or a host
	// that never answers, is not this: use ErrTimeout or ErrUnreachable.
	// A follower that sees it twice in a row from its leader stops waiting
	// for the fetch timeout (step_follower.go, noteLeaderGone).
	ErrPeerGone = errors.New("quorum: peer's connection refused or closed")
	// ErrTruncateBelowHighWatermark means a leader asked this node to drop
	// committed data; the node stops (Apache treats it as fatal too).
	ErrTruncateBelowHighWatermark = errors.New("quorum: leader asked to truncate below the high watermark")
	// ErrNoVoterSet is returned by New when Config.Voters and
	// Config.BootstrapServers are empty and neither the log nor a snapshot
	// names a voter set.
	ErrNoVoterSet = errors.New("quorum: no voter set")
	// ErrInconsistentLeader means two different leaders were seen in one
	// epoch: a safety violation somewhere in the quorum.
	ErrInconsistentLeader = errors.New("quorum: two leaders in one epoch")
)

// SnapshotID names a snapshot by the offset just after its last record and
// the epoch of that record.
type SnapshotID struct {
	EndOffset int64
	Epoch     int32
}

// Log is the read side of the replicated log. The core never writes through
// it: appends, truncations and snapshot installs leave through Ready, and the
// shell applies them before calling Advance, so after Advance the Log reflects
// them. Implementations must not change between Advance and the next Ready
// except by the shell's own hand (e.g. writing a local snapshot and dropping
// the log prefix it covers).
type Log interface {
	// StartOffset is the first offset still held in the log (the latest
	// snapshot's end offset after compaction, else 0).
	StartOffset() int64
	// EndOffset is the log end offset (LEO): the offset the next record gets.
	EndOffset() int64
	// LastEpoch is the epoch of the last batch, or the latest snapshot's when
	// the log is empty, or 0.
	LastEpoch() int32
	// EndOffsetForEpoch follows Apache's LeaderEpochFileCache.endOffsetFor:
	// for the newest epoch, (LEO, epoch); otherwise the start offset of the
	// first epoch above the requested one, paired with the largest epoch at
	// or below it (or the requested epoch when it is below every epoch held).
	// (-1, -1) when the cache cannot answer (no epochs held, or the requested
	// epoch is above every epoch held). The core adds what Apache's
	// KafkaMetadataLog adds on top (the earliest snapshot, and (LEO, last
	// epoch) in place of (-1, -1)); an implementation may already do so.
	EndOffsetForEpoch(epoch int32) (endOffset int64, foundEpoch int32)
	// Read returns whole RecordBatch v2 batches starting with the batch that
	// contains offset, at most maxBytes but always at least one batch if any,
	// in bytes of the caller's own (a Fetch answer carries them, and the
	// server may recycle them once it has encoded the answer).
	Read(offset int64, maxBytes int) ([]byte, error)
	// LatestSnapshot is the newest snapshot other than the bootstrap one
	// (00000000000000000000-0000000000, local to each node; the core ignores
	// it should an implementation return it anyway).
	LatestSnapshot() (SnapshotID, bool)
	// EarliestSnapshot is the oldest snapshot held, the bootstrap one
	// included: Apache's earliestSnapshotId, which decides when a fetcher is
	// sent to a snapshot and which epoch answers below the log start.
	EarliestSnapshot() (SnapshotID, bool)
	// ReadSnapshot returns up to maxBytes of snapshot id from byte pos, and
	// the snapshot's total size (with maxBytes 0, only the size, read from
	// the file's metadata).
	ReadSnapshot(id SnapshotID, pos int64, maxBytes int) (data []byte, size int64, err error)
}

// HardState is what must survive a crash before any message that depends on
// it leaves: it mirrors Apache's quorum-state file.
type HardState struct {
	LeaderID         int32
	LeaderEpoch      int32
	VotedID          int32
	VotedDirectoryID [16]byte
}

// Role is the node's position in the KRaft state machine.
type Role uint8

// Roles, as in Apache's QuorumState.
const (
	RoleUnattached Role = iota
	RoleProspective
	RoleCandidate
	RoleLeader
	RoleFollower
	RoleResigned
)

func (r Role) String() string {
	switch r {
	case RoleUnattached:
		return "Unattached"
	case RoleProspective:
		return "Prospective"
	case RoleCandidate:
		return "Candidate"
	case RoleLeader:
		return "Leader"
	case RoleFollower:
		return "Follower"
	case RoleResigned:
		return "Resigned"
	}
	return "Role(?)"
}

// SoftState is volatile state the shell may want to show or act on; it is
// never persisted.
type SoftState struct {
	Role     Role
	LeaderID int32 // -1 when unknown
	Epoch    int32
	VotedID  int32 // -1 when none
	IsVoter  bool
	// EpochCommitted is set on a leader once a record of its own epoch is
	// committed, and with it everything written before the epoch. Only then
	// may the controller on top act as the active one (Apache tells its
	// controller of a new leadership at that point): before, records of
	// earlier epochs may still be uncommitted and unapplied.
	EpochCommitted bool
}

// Message is one request or response between this node and a peer (voter,
// observer controller or broker). Exactly one of Request, Response and Err is
// set. For inbound requests the shell picks ReqID and the core copies it into
// its response. For the core's own requests the core picks ReqID; the shell
// steps the response back with the same ReqID, or a Message with Err set
// (ErrPeerGone, ErrUnreachable, ErrTimeout, or any error, wrapped or not)
// when the request failed.
type Message struct {
	From, To int32
	ReqID    uint64
	Request  kmsg.Request
	Response kmsg.Response
	Err      error
	// Endpoint, on a request, is where To listens when it is no voter
	// the shell knows of yet (the ApiVersions a leader sends a voter being
	// added); the shell sends the request there.
	Endpoint *Endpoint
	// SnapshotBytes, on a FetchSnapshotResponse without an error, is how
	// many bytes of the snapshot it names, from its Position, the shell
	// puts in its UnalignedRecords before the answer leaves: the core never
	// reads snapshot data into an answer, so a hundred observers
	// downloading a large snapshot cost its loop no reads and no memory.
	SnapshotBytes int64
}

// SnapshotChunk is a piece of a snapshot being downloaded from the leader.
// Chunks arrive in order; Done marks the last one, after which the shell
// freezes the snapshot (fsync + rename) and resets the log to start at
// ID.EndOffset.
type SnapshotChunk struct {
	ID       SnapshotID
	Position int64
	Data     []byte
	Done     bool
}

// Ready is everything the node needs the shell to do. Handle it in this
// order: write HardState durably; write SnapshotWrite; apply Truncate; append
// Append; fsync if MustSync; then send Messages (or send them first, when
// SendFirst); then apply committed records up to HighWatermark; then call
// Advance.
type Ready struct {
	HardState     *HardState
	SnapshotWrite *SnapshotChunk
	Truncate      *int64 // drop every batch at or after this offset
	Append        []byte // whole RecordBatch v2 batches, contiguous with the log end
	MustSync      bool
	Messages      []Message
	// SendFirst says Messages depend on nothing in this Ready being durable
	// (a leader's, whose HardState is unchanged): its answers may carry
	// Append to followers while its own fsync runs. The shell may send them
	// before persisting, or after. It may also defer the fsync: write
	// Append, call AdvanceWritten instead of Advance, and call LeaderSynced
	// once an fsync covering the records returns; any other Ready that has
	// something to persist must wait until deferred fsyncs are done.
	SendFirst     bool
	HighWatermark int64 // -1 when unknown
	SoftState     SoftState
}

// Endpoint is one listener of a node.
type Endpoint struct {
	Name string
	Host string
	Port uint16
}

// Config configures a Node. Zero durations take Apache's defaults.
type Config struct {
	NodeID      int32
	DirectoryID [16]byte
	ClusterID   string
	// Voters is the static voter set (controller.quorum.voters): id →
	// listeners. It holds until the log or a snapshot names a voter set
	// (voters.go); a dynamic quorum's node leaves it empty.
	Voters map[int32][]Endpoint
	// Endpoints are this node's own listeners, advertised as leader endpoints.
	Endpoints []Endpoint
	// BootstrapServers are controller.quorum.bootstrap.servers: where a
	// node that knows no leader sends its Fetch to find one, in place of
	// the voters, as Apache does whenever they are configured. A node
	// whose directory names no voter set (formatted
	// --no-initial-controllers) starts from them alone, as an observer.
	// The core addresses them as peers BootstrapID(0), BootstrapID(1), …
	BootstrapServers []Endpoint
	// AutoJoin is controller.quorum.auto.join.enable (Apache 4.2+): an
	// observer of a dynamic quorum makes itself a voter (autojoin.go).
	AutoJoin bool

	// The timings of controller.quorum.election.timeout.ms,
	// .fetch.timeout.ms, .election.backoff.max.ms, .request.timeout.ms,
	// .retry.backoff.ms and metadata.max.idle.interval.ms; 0 takes the
	// key's default from package kafkaconfig.
	ElectionTimeoutMs    int64
	FetchTimeoutMs       int64
	ElectionBackoffMaxMs int64
	RequestTimeoutMs     int64
	RetryBackoffMs       int64
	IdleIntervalMs       int64
	// FetchMaxWaitMs is a follower's Fetch MaxWaitMs; 0 is Apache's fixed
	// 500 (kraftd's nodes give kraftd.quorum.fetch.max.wait.ms).
	FetchMaxWaitMs int32
	// SilenceTimeoutMs, when set, is how long a voting follower that has
	// fetched from its leader waits for the next answer before it takes
	// the leader for failed (silence.go): it grants pre-votes from then on
	// and stands itself after its stagger. The leader answers a parked
	// Fetch within FetchMaxWaitMs, so the bound must exceed it; it also
	// shortens check-quorum and bounds the leader's own fsync. 0 keeps
	// Apache's rules: the fetch timeout alone.
	SilenceTimeoutMs int64
	MaxFetchBytes    int // 8 MiB
	MaxBatchBytes    int // 8 MiB

	// Rand drives every random choice (election jitter, bootstrap peer).
	Rand *rand.Rand
	// NowMs is the time the node starts at, on the clock later passed to
	// Tick. The initial role's timers run from it, as Apache's
	// QuorumState.initialize starts them from the current time: a restarted
	// leader waits an election timeout as Resigned, a restarted follower a
	// fetch timeout, instead of finding them expired by its first Tick.
	NowMs int64
	// HardState is the quorum-state read at startup.
	HardState HardState
	// Log is the replicated log as it is on disk at startup.
	Log Log
	// IdleRecord returns the value of the record the leader writes when the
	// log has been idle for IdleIntervalMs (the metadata NoOpRecord); nil
	// writes nothing.
	IdleRecord func() []byte
	// PeerVersions returns the highest version of API key the peer supports
	// (from its ApiVersions), or -1 when unknown, in which case the newest
	// version is used.
	PeerVersions func(peer int32, key int16) int16
}
