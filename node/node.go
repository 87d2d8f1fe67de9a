package node

import (
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage"
)

// ErrStopped is returned to requests and proposals that the node will never
// answer because it stops.
var ErrStopped = errors.New("node: stopping")

// ErrNotController is returned to proposals when this node is not, or stops
// being, the leader of the epoch they were made for: the controller's own
// sentinel, so that its core needs no translation.
var ErrNotController = controller.ErrNotController

// Config is what one node runs with. Zero timeouts take Apache's defaults
// (see quorum.Config).
type Config struct {
	NodeID int32
	// Voters is the static controller.quorum.voters; empty for a dynamic
	// quorum, whose voter set the quorum core reads from the log and its
	// snapshots (quorum/voters.go).
	Voters map[int32][]quorum.Endpoint
	// Endpoints are this node's own controller listeners.
	Endpoints []quorum.Endpoint
	// BootstrapServers are controller.quorum.bootstrap.servers, where the
	// node looks for a leader it does not know (quorum/bootstrap.go); an
	// endpoint without a name is on the controller listener. A node
	// formatted --no-initial-controllers starts from them as an observer.
	BootstrapServers []quorum.Endpoint
	// AutoJoin is controller.quorum.auto.join.enable: as an observer of a
	// dynamic quorum the node asks its leader to add it as a voter.
	AutoJoin bool

	ElectionTimeoutMs, FetchTimeoutMs, ElectionBackoffMaxMs int64
	RequestTimeoutMs, RetryBackoffMs, IdleIntervalMs        int64
	// SilenceTimeoutMs and FetchMaxWaitMs are kraftd.quorum.silence.timeout.ms
	// and kraftd.quorum.fetch.max.wait.ms: the failure detector for a
	// leader that goes silent (quorum/silence.go); 0 takes the core's
	// defaults (no silence bound, a 500 ms MaxWaitMs: Apache's rules).
	SilenceTimeoutMs int64
	FetchMaxWaitMs   int32

	Snapshots SnapshotPolicy
	Broken    BrokenRules
	// Meter, for NewRunner, receives what the loop measures (nil: nothing
	// is measured); a Node driven otherwise takes its Env's.
	Meter Meter
}

// Proposal is a batch of records to write through the quorum at the leader.
// Done is called exactly once on the loop goroutine: with the offset of the
// first record and nil once they committed and were replayed, or with -1 (or
// the offset, when written) and the reason they never will be. Done must not
// block or call back into the Node.
type Proposal struct {
	Records []metadata.Record
	// Epoch, if not 0 (no leader has epoch 0), is the leader epoch the
	// records were built for. The controller validates each operation
	// against the records of the ones before it that are not committed yet,
	// so its records may enter the log only behind all of those: once this
	// node stops leading that epoch it never leads it again, so refusing
	// every proposal of an epoch this node no longer leads makes the ones
	// that land a prefix of those made.
	Epoch int32
	// Stamp, if set, learns the offset of the first record before the
	// records are encoded (a broker epoch is its registration's offset).
	Stamp func(firstOffset int64)
	Done  func(firstOffset int64, err error)
	// KRaftUpgrade, if set, has the leader upgrade kraft.version before it
	// takes the records (quorum.Node.UpgradeKRaftVersion), so that their
	// commit means the upgrade's has; a refusal is Done's error, a
	// *quorum.KRaftUpgradeError. With ValidateOnly nothing is written:
	// Done answers at once.
	KRaftUpgrade *KRaftUpgrade
}

// KRaftUpgrade is the kraft.version a Proposal upgrades the quorum to.
type KRaftUpgrade struct {
	Version      int16
	ValidateOnly bool
}

type commitWait struct {
	first, last int64
	epoch       int32
	done        func(int64, error)
}

// Node is one controller's runtime: the quorum core, its Ready loop, the
// metadata log and the state machine committed records are replayed into.
type Node struct {
	cfg  Config
	env  Env
	log  zerolog.Logger
	disk *Disk
	core *quorum.Node
	sm   StateMachine
	// seam drives the controller's core, if one is attached (seam.go).
	seam *Seam

	waiters     map[uint64]waiter
	nextInbound uint64
	hw          int64
	soft        quorum.SoftState
	activated   int32 // epoch whose activation records were proposed, -1 none
	// held are proposals made while this node leads an epoch it has not
	// activated yet: they wait behind the activation records, which on an
	// empty log are the bootstrap feature levels. An Apache follower stops
	// when it commits any record before metadata.version is known.
	held         []*Proposal
	commitWaits  []commitWait
	snapshotSink *storage.SnapshotWriter
	snapshots    *Snapshotter
	// voters is the voter set the transport was last told of.
	voters quorum.VoterSet
	sync   deferredSyncs
	fatal  error
	// electionStart is when the running election began (meter.go), zero
	// while a leader is known; leaderSince when this node last won
	// leadership (lifecycle.go).
	electionStart, leaderSince time.Time
	// resigning is set once Resign was asked for (a graceful stop);
	// endQuorumTo and successors are whom EndQuorumEpoch went to and the
	// successors it named, for the stop's log line.
	resigning   bool
	endQuorumTo []int32
	successors  []int32
	// appends are, on a leader with a meter, the log end after each of its
	// appends and when it was written, until the high watermark passes it
	// (the meter's commit latency, as Apache's: every batch, idle records
	// included).
	appends []appendStamp

	status atomic.Pointer[quorum.Status]
	// caughtUp is closed once the state machine has first replayed every
	// record below a known high watermark (Apache's MetadataLoader
	// finishing its catch-up): until then the image may lack ACLs that
	// deny, so an authorizer must not decide from it.
	caughtUp     chan struct{}
	caughtUpOnce bool
}

// New builds a node over an opened disk. Nothing happens until it is driven.
func New(cfg Config, disk *Disk, sm StateMachine, env Env, log zerolog.Logger) (*Node, error) {
	n := &Node{
		cfg: cfg, env: env, log: log, disk: disk, sm: sm,
		waiters: map[uint64]waiter{}, hw: -1, activated: -1, caughtUp: make(chan struct{}),
	}
	began := env.Clock.Now()
	noOp := metadata.EncodeValue(&metadata.NoOpRecord{})
	var err error
	n.core, err = quorum.New(quorum.Config{
		NodeID:               cfg.NodeID,
		DirectoryID:          disk.Meta.DirectoryID,
		ClusterID:            disk.Meta.ClusterID,
		Voters:               cfg.Voters,
		Endpoints:            cfg.Endpoints,
		BootstrapServers:     cfg.BootstrapServers,
		AutoJoin:             cfg.AutoJoin,
		ElectionTimeoutMs:    cfg.ElectionTimeoutMs,
		FetchTimeoutMs:       cfg.FetchTimeoutMs,
		ElectionBackoffMaxMs: cfg.ElectionBackoffMaxMs,
		RequestTimeoutMs:     cfg.RequestTimeoutMs,
		RetryBackoffMs:       cfg.RetryBackoffMs,
		IdleIntervalMs:       cfg.IdleIntervalMs,
		SilenceTimeoutMs:     cfg.SilenceTimeoutMs,
		FetchMaxWaitMs:       cfg.FetchMaxWaitMs,
		Rand:                 env.Rand,
		NowMs:                n.nowMs(),
		HardState:            disk.HardState,
		Log:                  disk.QuorumLog(),
		IdleRecord:           func() []byte { return noOp },
		PeerVersions: func(peer int32, key int16) int16 {
			if v, ok := env.Transport.MaxVersion(peer, key); ok {
				return v
			}
			return -1
		},
	})
	if errors.Is(err, quorum.ErrNoVoterSet) {
		return nil, &SettingError{Key: "controller.quorum.bootstrap.servers", Err: errors.New("is empty, as is controller.quorum.voters, and the directory holds no voter set: set either to find the quorum")}
	}
	if err != nil {
		return nil, err
	}
	snapshot, err := n.loadLatestSnapshot()
	if err != nil {
		return nil, err
	}
	n.logRecovered(began, snapshot)
	// The lifecycle lines describe changes from the recovered role on.
	n.soft = n.core.Status().SoftState
	if n.soft.LeaderID < 0 {
		n.electionStart = began
	}
	n.snapshots = NewSnapshotter(disk.fs, disk.Log, cfg.Snapshots, env.Clock, env.Background, n.controlStateAt, sm.FreezeImage, log)
	if m := env.Meter; m != nil {
		n.snapshots.written = m.SnapshotWritten
		if snapshot != "none" {
			m.SnapshotLoaded()
		}
	}
	n.core.Tick(n.nowMs())
	n.publishStatus()
	return n, nil
}

// loadLatestSnapshot loads the newest snapshot into the state machine.
// Only committed records should be applied, but the high watermark is not
// known until a leader says so; so at start the image holds what the
// latest snapshot holds, and the loop applies the log as the high
// watermark moves.
// It names the snapshot loaded, "none" if there was none.
func (n *Node) loadLatestSnapshot() (string, error) {
	id, ok := n.disk.Log.LatestSnapshot()
	if !ok {
		return "none", nil
	}
	im, _, err := n.disk.LoadSnapshot(id)
	if err != nil {
		return "", err
	}
	n.sm.LoadSnapshot(id.EndOffset-1, im)
	return id.String(), nil
}

// Status is the quorum's state as of the last Ready; safe from any
// goroutine.
func (n *Node) Status() quorum.Status { return *n.status.Load() }

func (n *Node) publishStatus() {
	st := n.core.Status()
	n.status.Store(&st)
	n.announceVoters(st.Voters)
}

// announceVoters tells the transport the endpoints of a voter set it has
// not seen yet.
func (n *Node) announceVoters(set quorum.VoterSet) {
	book, ok := n.env.Transport.(Endpoints)
	if !ok || slices.EqualFunc(set, n.voters, func(a, b quorum.Voter) bool {
		return a.ID == b.ID && slices.Equal(a.Endpoints, b.Endpoints)
	}) {
		return
	}
	n.voters = set
	for _, v := range set {
		if v.ID != n.cfg.NodeID {
			book.SetEndpoints(v.ID, v.Endpoints)
		}
	}
}

// CaughtUp is closed once the state machine has first replayed every
// record below a known high watermark. Safe from any goroutine.
func (n *Node) CaughtUp() <-chan struct{} { return n.caughtUp }

// Err is the fatal error that stopped the node, if any.
func (n *Node) Err() error { return n.fatal }

func (n *Node) nowMs() int64 { return n.env.Clock.Now().UnixMilli() }

// Tick advances the core's clock to now, and runs the controller's timed
// work when it is due.
func (n *Node) Tick() {
	n.core.Tick(n.nowMs())
	if n.seam != nil {
		n.seam.tick(n.env.Clock.Now())
	}
}

// Inbound steps a KRaft request from a client or peer; reply gets the
// answer, or nil if the node stops first. reply must not block.
func (n *Node) Inbound(req kmsg.Request, reply func(kmsg.Response)) {
	n.inbound(req, waiter{reply: reply})
}

// waiter is who waits for the answer to an inbound request; one that
// streams takes a FetchSnapshot chunk as a SnapshotChunk, bytes unread.
type waiter struct {
	reply  func(kmsg.Response)
	stream bool
}

func (n *Node) inbound(req kmsg.Request, w waiter) {
	if n.fatal != nil {
		w.reply(nil)
		return
	}
	if req.Key() == 54 {
		n.log.Info().Msg("received EndQuorumEpoch: the leader is resigning")
	}
	n.nextInbound++
	n.waiters[n.nextInbound] = w
	n.stepCore(quorum.Message{From: -1, To: n.cfg.NodeID, ReqID: n.nextInbound, Request: req})
}

// StepPeer steps the answer (or failure) of a request the core sent.
func (n *Node) StepPeer(m quorum.Message) {
	if n.fatal != nil {
		return
	}
	m.To = n.cfg.NodeID
	n.stepCore(m)
}

func (n *Node) stepCore(m quorum.Message) {
	if err := n.core.Step(m); err != nil {
		n.fatal = err
	}
}

// Resign gives up leadership gracefully (EndQuorumEpoch) before a stop.
func (n *Node) Resign() {
	n.resigning = true
	n.core.Resign()
}

// Resignation says, after Resign and Process, whether this node resigned
// a leadership and, if so, to which voters EndQuorumEpoch went and which
// successors it named, best first.
func (n *Node) Resignation() (resigned bool, epoch int32, to, successors []int32) {
	return n.soft.Role == quorum.RoleResigned, n.soft.Epoch, n.endQuorumTo, n.successors
}

// Propose hands records to the quorum at the active controller.
func (n *Node) Propose(p *Proposal) {
	if n.fatal != nil {
		p.Done(-1, n.fatal)
		return
	}
	st := n.core.Status()
	if st.Role == quorum.RoleLeader && n.activated != st.Epoch {
		n.held = append(n.held, p)
		return
	}
	if p.Epoch != 0 && (st.Role != quorum.RoleLeader || st.Epoch != p.Epoch) {
		p.Done(-1, ErrNotController)
		return
	}
	if u := p.KRaftUpgrade; u != nil {
		if err := n.core.UpgradeKRaftVersion(st.Epoch, u.Version, u.ValidateOnly); err != nil || u.ValidateOnly || len(p.Records) == 0 {
			p.Done(-1, err)
			return
		}
	}
	if p.Stamp != nil {
		// On the leader the core appends at its log end; elsewhere Propose
		// fails below and the stamp is never seen.
		p.Stamp(st.EndOffset)
	}
	values := make([][]byte, len(p.Records))
	for i, r := range p.Records {
		values[i] = metadata.EncodeValue(r)
	}
	base, epoch, err := n.core.Propose(values)
	if err != nil {
		if errors.Is(err, quorum.ErrNotLeader) {
			err = ErrNotController
		}
		p.Done(-1, err)
		return
	}
	n.commitWaits = append(n.commitWaits, commitWait{first: base, last: base + int64(len(values)) - 1, epoch: epoch, done: p.Done})
}

// Close answers everything still waiting with err (ErrStopped on a clean
// stop), waits for background work and closes the disk. The node must not
// be driven afterwards.
func (n *Node) Close(err error) error {
	n.failAll(err)
	closeErr := n.sync.join(n)
	n.snapshots.Close()
	if derr := n.disk.Close(); closeErr == nil {
		closeErr = derr
	}
	if n.fatal != nil {
		return n.fatal
	}
	return closeErr
}

func (n *Node) failAll(err error) {
	n.failHeld(err)
	for id, w := range n.waiters {
		delete(n.waiters, id)
		w.reply(nil)
	}
	for _, w := range n.commitWaits {
		w.done(w.first, err)
	}
	n.commitWaits = nil
	if n.seam != nil {
		n.seam.stop()
	}
}

// failHeld answers the proposals held for an activation that will not come.
func (n *Node) failHeld(err error) {
	for _, p := range n.held {
		p.Done(-1, err)
	}
	n.held = nil
}

// controlStateAt is the quorum core's kraft.version and voter set at
// offset, as a snapshot header writes them.
func (n *Node) controlStateAt(offset int64) (int16, *metadata.VotersRecord) {
	kv, set := n.core.ControlStateAt(offset)
	if set == nil {
		return kv, nil
	}
	return kv, set.Record()
}
