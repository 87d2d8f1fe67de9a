// Package nodetest drives the production runtime, node.Node, in tests that
// want to see and steer every step: a node runs over an in-memory disk
// (storage.MemFS) formatted as `kraftd format` formats a static quorum's
// node (or, with Config.Standalone, a standalone dynamic quorum's), with
// the controller as its state machine, and reaches the world
// only through hand-held doubles of node.Env: a transport that collects what
// the node sends (requests to peers, answers to requests delivered to it)
// as quorum.Messages for the test to route, a clock the test sets, a syncer
// that runs the leader's deferred fsync at once or holds it until the test
// releases it, and an observer that records what the loop did to the disk.
// Crash keeps what a power loss would leave of the disk; Restart opens it
// again.
//
// It holds no Ready loop of its own: every Ready is handled by node.Node's,
// the one production runs. The quorum core's scenario transcripts and its
// send-first tests are written against it.
package nodetest

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/uuid"
)

// Dir is the metadata.log.dir of every harness node, on its own MemFS.
const Dir = "/meta"

// noIdleIntervalMs is an idle interval no test reaches: no NoOp batches.
const noIdleIntervalMs = 1 << 40

// Config describes one harness node.
type Config struct {
	ID int32
	// Voters is the static voter set (controller.quorum.voters). A node
	// whose ID is not in it is an observer.
	Voters    map[int32][]quorum.Endpoint
	ClusterID string // "" takes "nodetest-cluster"
	// Rand makes the core's randomness for each start; nil seeds it from
	// the node id and the start's number.
	Rand func() *rand.Rand
	// PeerVersion is the transport's MaxVersion: the highest version of
	// key the peer serves, if known. Nil knows none (newest versions).
	PeerVersion func(peer int32, key int16) (int16, bool)
	// HoldSyncs keeps the leader's deferred fsync (node.Syncer) until the
	// test calls ReleaseSync; otherwise Process runs it at once.
	HoldSyncs bool
	// IdleIntervalMs is how long a leader's log may stay idle before it
	// writes a NoOp; 0 means never, so a transcript holds only what it
	// proposed.
	IdleIntervalMs int64
	// SegmentBytes is metadata.log.segment.bytes; 0 takes 1, one segment
	// per append, so that a snapshot's retention deletes whole segments.
	SegmentBytes int64
	// Features, if set, are written at format time into the bootstrap
	// snapshot 00000000000000000000-0000000000.checkpoint, as Apache 4.4's
	// format lays them out, so the image starts with them (a
	// metadata.version, without which no metadata snapshot can be written)
	// and the log holds none of them: the controller is given no bootstrap
	// records to activate.
	Features []metadata.Record
	// Standalone formats the node as `kraftd format --standalone` does, a
	// dynamic quorum of itself: the bootstrap snapshot also holds
	// kraft.version 1 and a VotersRecord naming this node alone (Voters
	// is then ignored), and each start takes its voter set from the disk
	// (quorum/voters.go), as kraftd start does.
	Standalone bool
	// InitialVoters, if set, formats the node as `kraftd format
	// --initial-controllers` does, a dynamic quorum of these voters (each
	// with its DirectoryID): the bootstrap snapshot holds kraft.version 1
	// and their VotersRecord, whether or not this node is among them, and
	// Voters is ignored.
	InitialVoters map[int32][]quorum.Endpoint
	// Endpoints are the node's own listeners; nil takes its entry in
	// Voters or InitialVoters (StandaloneEndpoint when Standalone).
	Endpoints []quorum.Endpoint
	// BootstrapServers are controller.quorum.bootstrap.servers. With no
	// Voters, InitialVoters or Standalone the node is formatted as `kraftd
	// format --no-initial-controllers` does and starts as an observer that
	// knows the quorum only through them. The test's network delivers a
	// message to quorum.BootstrapID(i) at the node listening on its
	// Message.Endpoint.
	BootstrapServers []quorum.Endpoint
	// Tune, if set, adjusts the node's configuration before each start.
	Tune func(*node.Config)
}

// StandaloneEndpoint is the controller endpoint a Standalone node's
// VotersRecord gives it.
var StandaloneEndpoint = quorum.Endpoint{Name: "CONTROLLER", Host: "localhost", Port: 9093}

// Node is one harness node: a MemFS disk and, while it is up, node.Node
// with the controller running on it.
type Node struct {
	cfg    Config
	fs     *storage.MemFS
	crashR *rand.Rand
	incarn uint64
	// formats counts the Reformats: the directory id changes with each.
	formats int
	now     int64 // the clock, in ms since the epoch

	disk *node.Disk
	node *node.Node
	sm   *controller.Controller

	outbox    []quorum.Message
	endpoints map[int32]quorum.Endpoint // where peers listen, as the node said
	events    []Event
	sync      *node.SyncJob // the leader's deferred fsync, while one is out
	// slowAppendMs is how long the next append to the log takes.
	slowAppendMs int64
}

// SlowNextAppend makes the node's next append to its log, with its fsync,
// take ms on its clock: a follower whose own disk is slow sends its next
// Fetch that much later than it took the last answer.
func (h *Node) SlowNextAppend(ms int64) { h.slowAppendMs = ms }

// New formats a directory for cfg's node and starts it with the clock at 0.
func New(cfg Config) (*Node, error) {
	if cfg.ClusterID == "" {
		cfg.ClusterID = "nodetest-cluster"
	}
	h := &Node{cfg: cfg, fs: storage.NewMemFS(), crashR: rand.New(rand.NewPCG(uint64(cfg.ID), 0xc7a5)), endpoints: map[int32]quorum.Endpoint{}}
	initial := cfg.InitialVoters
	if cfg.Standalone {
		initial = map[int32][]quorum.Endpoint{cfg.ID: {StandaloneEndpoint}}
	}
	if err := format(h.fs, Dir, cfg.ClusterID, cfg.ID, cfg.Features, initial); err != nil {
		return nil, err
	}
	return h, h.start()
}

// Format writes, on fsys, what `kraftd format` writes into dir for node id
// of a static quorum: meta.properties (last, so the directory counts as
// formatted only once everything else is durable) and, when features are
// given, the bootstrap snapshot 00000000000000000000-0000000000.checkpoint
// holding them, as Apache 4.4's format lays them out.
func Format(fsys storage.FS, dir, clusterID string, id int32, features []metadata.Record) error {
	return format(fsys, dir, clusterID, id, features, nil)
}

// FormatDynamic is Format for a dynamic quorum, as `kraftd format
// --initial-controllers` writes it: the bootstrap snapshot also holds
// kraft.version 1 and the VotersRecord of initial (each voter with its
// DirectoryID), whether or not node id is among them.
func FormatDynamic(fsys storage.FS, dir, clusterID string, id int32, features []metadata.Record, initial map[int32][]quorum.Endpoint) error {
	return format(fsys, dir, clusterID, id, features, initial)
}

// FormatDynamicAs is FormatDynamic with the node's directory id given (a
// disk formatted again: ReformattedDirectoryID); the initial voters keep
// their first ones.
func FormatDynamicAs(fsys storage.FS, dir, clusterID string, id int32, dirID [16]byte, features []metadata.Record, initial map[int32][]quorum.Endpoint) error {
	return formatDir(fsys, dir, clusterID, id, dirID, features, initial)
}

// DirectoryID is the directory.id a harness node of id is formatted with.
func DirectoryID(id int32) [16]byte { return ReformattedDirectoryID(id, 0) }

// ReformattedDirectoryID is the directory.id node id has after its
// formats-th Reformat.
func ReformattedDirectoryID(id int32, formats int) [16]byte {
	var dirID [16]byte
	dirID[0], dirID[1], dirID[14], dirID[15] = 0x6e, byte(formats), byte(id>>8), byte(id) // never a reserved id
	return dirID
}

// format is Format, and with initial voters also the initial voter set of
// a dynamic quorum in the bootstrap snapshot.
func format(fsys storage.FS, dir, clusterID string, id int32, features []metadata.Record, initial map[int32][]quorum.Endpoint) error {
	return formatDir(fsys, dir, clusterID, id, DirectoryID(id), features, initial)
}

// formatDir is format with the directory id given.
func formatDir(fsys storage.FS, dir, clusterID string, id int32, dirID [16]byte, features []metadata.Record, initial map[int32][]quorum.Endpoint) error {
	meta := storage.MetaProperties{Version: 1, ClusterID: clusterID, NodeID: id, DirectoryID: uuid.UUID(dirID)}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if len(features) > 0 || len(initial) > 0 {
		partition := dir + "/" + storage.MetadataLogDirName
		f := metadata.SnapshotFile{Records: features}
		if len(initial) > 0 {
			set := quorum.VoterSet{}
			for vid, eps := range initial {
				set = append(set, quorum.Voter{ID: vid, DirectoryID: DirectoryID(vid), Endpoints: eps, MaxKRaft: 1})
			}
			slices.SortFunc(set, func(a, b quorum.Voter) int { return int(a.ID) - int(b.ID) })
			f.Extra = []metadata.ControlValue{&metadata.KRaftVersionRecord{KRaftVersion: 1}, set.Record()}
		}
		snap := metadata.EncodeSnapshotFile(f, 0)
		if err := fsys.MkdirAll(partition, 0o755); err != nil {
			return err
		}
		if err := storage.WriteFileAtomic(fsys, partition+"/"+storage.BootstrapSnapshotID.FileName(), snap); err != nil {
			return err
		}
	}
	return storage.WriteMetaProperties(fsys, dir+"/"+storage.MetaPropertiesName, meta, time.UnixMilli(0))
}

func (h *Node) start() error {
	h.incarn++
	segment := h.cfg.SegmentBytes
	if segment == 0 {
		segment = 1
	}
	disk, err := node.OpenDisk(h.fs, node.DiskConfig{Dir: Dir, NodeID: h.cfg.ID, SegmentBytes: segment, IndexBytes: 4 << 10}, zerolog.Nop())
	if err != nil {
		return err
	}
	idle := h.cfg.IdleIntervalMs
	if idle == 0 {
		idle = noIdleIntervalMs
	}
	voters, endpoints := h.cfg.Voters, h.cfg.Voters[h.cfg.ID]
	switch {
	case h.cfg.Standalone:
		// The quorum core reads the voter set from the disk.
		voters, endpoints = nil, []quorum.Endpoint{StandaloneEndpoint}
	case len(h.cfg.InitialVoters) > 0:
		voters, endpoints = nil, h.cfg.InitialVoters[h.cfg.ID]
	case len(h.cfg.BootstrapServers) > 0:
		voters = nil
	}
	if h.cfg.Endpoints != nil {
		endpoints = h.cfg.Endpoints
	}
	cfg := node.Config{
		NodeID:           h.cfg.ID,
		Voters:           voters,
		Endpoints:        endpoints,
		BootstrapServers: h.cfg.BootstrapServers,
		IdleIntervalMs:   idle,
		// Snapshots only when the test asks (SnapshotNow), and no
		// retention behind its back.
		Snapshots: node.SnapshotPolicy{MaxBytes: math.MaxInt64, RetentionBytes: -1, RetentionMs: -1},
	}
	if h.cfg.Tune != nil {
		h.cfg.Tune(&cfg)
	}
	rng := rand.New(rand.NewPCG(uint64(h.cfg.ID), h.incarn))
	if h.cfg.Rand != nil {
		rng = h.cfg.Rand()
	}
	env := node.Env{
		Transport:  transport{h},
		Clock:      clock{h},
		Syncer:     syncer{h},
		Background: RunNow,
		Rand:       rng,
		Observer:   observer{h},
	}
	sm := controller.New(h.cfg.ID, nil) // nil bootstrap: no activation records
	n, err := node.New(cfg, disk, sm, env, zerolog.Nop())
	if err != nil {
		disk.Close()
		return err
	}
	h.disk, h.node, h.sm, h.sync = disk, n, sm, nil
	return nil
}

// ErrDown is returned by methods that need a running node.
var ErrDown = errors.New("nodetest: node is down")

// ID is the node's id.
func (h *Node) ID() int32 { return h.cfg.ID }

// Up reports whether the node runs (it has not crashed since its last
// start).
func (h *Node) Up() bool { return h.node != nil }

// Runtime is the running node.Node, nil while down; a restart replaces
// it.
func (h *Node) Runtime() *node.Node { return h.node }

// Disk is the running node's opened directory, nil while down.
func (h *Node) Disk() *node.Disk { return h.disk }

// Controller is the state machine committed records are replayed into.
func (h *Node) Controller() *controller.Controller { return h.sm }

// Status is the quorum's state as of the last Ready.
func (h *Node) Status() quorum.Status { return h.node.Status() }

// Now is the node's clock in milliseconds.
func (h *Node) Now() int64 { return h.now }

// SetNow moves the clock to ms (never backwards) and ticks the core.
func (h *Node) SetNow(ms int64) {
	h.now = max(h.now, ms)
	if h.node != nil {
		h.node.Tick()
	}
}

// Advance moves the clock forward by ms and ticks the core.
func (h *Node) Advance(ms int64) { h.SetNow(h.now + ms) }

// Deliver hands m to the node: a request through Inbound (its answer goes
// to the outbox, addressed to m.From under m.ReqID), anything else through
// StepPeer. It reports false, dropping m, while the node is down.
func (h *Node) Deliver(m quorum.Message) bool {
	if h.node == nil {
		return false
	}
	if m.Request == nil {
		h.node.StepPeer(m)
		return true
	}
	if req, ok := m.Request.(*kmsg.ApiVersionsRequest); ok {
		// The server answers ApiVersions, not the node: answer as it does.
		h.send(quorum.Message{From: h.cfg.ID, To: m.From, ReqID: m.ReqID, Response: ApiVersionsResponse(req)})
		return true
	}
	h.Inbound(m.Request, func(resp kmsg.Response) {
		h.send(quorum.Message{From: h.cfg.ID, To: m.From, ReqID: m.ReqID, Response: resp})
	})
	return true
}

// send puts m in the outbox and notes in the events when it left.
func (h *Node) send(m quorum.Message) {
	h.outbox = append(h.outbox, m)
	h.events = append(h.events, Event{Kind: Sent, Message: m})
}

// Inbound steps req with a reply of the test's own. The reply is dropped
// if the node crashes first, and never sees nil.
func (h *Node) Inbound(req kmsg.Request, reply func(kmsg.Response)) {
	incarn := h.incarn
	h.node.Inbound(req, func(resp kmsg.Response) {
		if resp != nil && h.incarn == incarn {
			reply(resp)
		}
	})
}

// Process runs the node's Ready loop until it has nothing left. Unless
// syncs are held, each deferred fsync of the leader is run and reported
// meanwhile, so Process returns with the log durable. A node that is down
// does nothing.
func (h *Node) Process() error {
	for h.node != nil {
		if err := h.node.Process(); err != nil {
			return err
		}
		if h.cfg.HoldSyncs || !h.ReleaseSync() {
			return nil
		}
	}
	return nil
}

// HeldSync is the leader's deferred fsync while it is out.
func (h *Node) HeldSync() (node.SyncJob, bool) {
	if h.sync == nil {
		return node.SyncJob{}, false
	}
	return *h.sync, true
}

// ReleaseSync runs the deferred fsync that is out and reports it to the
// node (node.Node.Synced); it reports false when none was. Call Process
// afterwards to let the loop act on it.
func (h *Node) ReleaseSync() bool {
	if h.sync == nil || h.node == nil {
		return false
	}
	job := *h.sync
	h.sync = nil
	h.node.Synced(job, h.disk.Log.Sync())
	return true
}

// Messages returns, and forgets, what the node sent since the last call:
// requests to peers and answers to delivered requests, in order.
func (h *Node) Messages() []quorum.Message {
	out := h.outbox
	h.outbox = nil
	return out
}

// Events returns, and forgets, what the loop did since the last call.
func (h *Node) Events() []Event {
	out := h.events
	h.events = nil
	return out
}

// Crash stops the node where it is, without closing anything: the disk
// keeps what a power loss would leave (storage.MemFS.Crash, drawn from a
// generator seeded by the node id, so a test replays the same loss).
// Messages already sent stay in the outbox; answers not yet given are lost.
func (h *Node) Crash() {
	h.node, h.disk, h.sm, h.sync = nil, nil, nil, nil
	h.incarn++ // replies of the lost incarnation are dropped
	h.fs = h.fs.Crash(h.crashR)
}

// Restart starts the node again on its disk, keeping the clock. A node
// that is up is first closed cleanly; one stopped by a fatal error restarts
// too, as its process would.
func (h *Node) Restart() error {
	_ = h.Close() // the error is the fatal one, or the old disk's
	return h.start()
}

// Reformat stops the node, replaces its disk with a freshly formatted one
// under a new directory id (ReformattedDirectoryID), as a disk replaced
// and formatted again with the same configuration, and starts it.
func (h *Node) Reformat() error {
	_ = h.Close()
	h.formats++
	h.fs = storage.NewMemFS()
	initial := h.cfg.InitialVoters
	if h.cfg.Standalone {
		initial = map[int32][]quorum.Endpoint{h.cfg.ID: {StandaloneEndpoint}}
	}
	if err := formatDir(h.fs, Dir, h.cfg.ClusterID, h.cfg.ID, ReformattedDirectoryID(h.cfg.ID, h.formats), h.cfg.Features, initial); err != nil {
		return err
	}
	return h.start()
}

// Close stops a running node cleanly.
func (h *Node) Close() error {
	if h.node == nil {
		return nil
	}
	err := h.node.Close(node.ErrStopped)
	h.node, h.disk, h.sm, h.sync = nil, nil, nil, nil
	return err
}

// ApiVersionsResponse is what kraftd's server answers a peer's ApiVersions
// with, as far as the quorum reads it: the supported features.
func ApiVersionsResponse(req *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	for _, f := range controller.SupportedFeatures {
		resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{Name: f.Name, MinVersion: f.Min, MaxVersion: f.Max})
	}
	return resp
}
