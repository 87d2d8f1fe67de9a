package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
)

// tickInterval is how often the quorum core's clock advances. Every KRaft
// timer is hundreds of milliseconds or more, so 5 ms of granularity costs
// nothing measurable and keeps parked fetches prompt.
const tickInterval = 5 * time.Millisecond

// ErrStopped is returned to requests that arrive while the node shuts down.
var ErrStopped = errors.New("server: node is stopping")

// Node runs one kraftd controller: the quorum core with its Ready loop, the
// metadata log on disk, the peer client and the controller's image. It
// implements Backend for the request handlers.
type Node struct {
	cfg   *Config
	log   zerolog.Logger
	disk  *Disk
	core  *quorum.Node
	peers *Peers
	ctl   *controller.Controller

	events chan nodeEvent
	stop   chan struct{}
	done   chan struct{}
	err    error

	// Loop-owned state.
	waiters     map[uint64]chan kmsg.Response
	nextInbound uint64
	hw          int64
	soft        quorum.SoftState
	activated   int32 // epoch whose activation records were proposed, -1 none
	// held are proposals made while this node leads an epoch it has not
	// activated yet: they wait behind the activation records, which on an
	// empty log are the bootstrap feature levels. An Apache follower stops
	// when it commits any record before metadata.version is known.
	held         []*proposal
	commitWaits  []commitWait
	snapshotSink *storage.SnapshotWriter
	snapshots    *Snapshotter // writes snapshots of the committed log (snapshots.go)
	voterIDs     []int32

	status atomic.Pointer[quorum.Status]
	start  time.Time

	// The leader's deferred fsyncs (syncer.go). Loop-owned but for the
	// channels.
	syncReqs    chan syncJob
	syncResults chan syncResult
	syncing     bool     // a job is with the syncer
	syncNext    *syncJob // the newest job asked for meanwhile
}

type nodeEvent struct {
	inbound  *kmsg.Request
	reply    chan kmsg.Response
	peer     *PeerResult
	proposal *proposal
}

// proposal is a batch of records the controller wants written. Once
// written, offset gets the offset of its first record; done gets nil once
// they are committed, or the reason they never will be.
type proposal struct {
	records []metadata.Record
	offset  chan int64
	done    chan error
	// stamp, if set, learns the offset of the first record before the
	// records are encoded (a broker epoch is its registration's offset).
	stamp func(firstOffset int64)
	// epoch, if not 0 (no leader has epoch 0), is the leader epoch the
	// records were built for. The controller validates each operation
	// against the records of the ones before it that are not committed
	// yet, so its records may enter the log only behind all of those: once
	// this node stops leading that epoch it never leads it again, so
	// refusing every proposal of an epoch this node no longer leads makes
	// the ones that land a prefix of those made.
	epoch int32
}

type commitWait struct {
	lastOffset int64
	epoch      int32
	done       chan error
}

// NewNode opens the node's directory and builds its parts. Nothing runs
// until Run.
func NewNode(cfg *Config, disk *Disk, log zerolog.Logger) (*Node, error) {
	voters, kraftVersion, err := disk.InitialVoters(cfg)
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, log: log, disk: disk,
		ctl:         controller.New(cfg.NodeID, disk.Bootstrap),
		events:      make(chan nodeEvent, 1024),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
		waiters:     map[uint64]chan kmsg.Response{},
		hw:          -1,
		activated:   -1,
		start:       time.Now(),
		syncReqs:    make(chan syncJob, 1),
		syncResults: make(chan syncResult, 1),
	}
	n.peers = NewPeers(fmt.Sprintf("raft-client-%d", cfg.NodeID), time.Duration(cfg.RequestTimeoutMs)*time.Millisecond, n.deliverPeerResult, log)
	listener := cfg.ControllerListenerName[0]
	qv := map[int32][]quorum.Endpoint{}
	for id, eps := range voters {
		qv[id] = eps
		n.voterIDs = append(n.voterIDs, id)
		for _, e := range eps {
			if e.Name == listener && id != cfg.NodeID {
				n.peers.SetAddress(id, fmt.Sprintf("%s:%d", e.Host, e.Port))
			}
		}
	}
	var own []quorum.Endpoint
	for _, e := range cfg.ControllerEndpoints() {
		own = append(own, quorum.Endpoint{Name: e.Name, Host: e.Host, Port: e.Port})
	}
	noOp := metadata.EncodeValue(&metadata.NoOpRecord{})
	n.core, err = quorum.New(quorum.Config{
		NodeID:               cfg.NodeID,
		DirectoryID:          disk.Meta.DirectoryID,
		ClusterID:            disk.Meta.ClusterID,
		Voters:               qv,
		Endpoints:            own,
		KRaftVersion:         kraftVersion,
		ElectionTimeoutMs:    int64(cfg.ElectionTimeoutMs),
		FetchTimeoutMs:       int64(cfg.FetchTimeoutMs),
		ElectionBackoffMaxMs: int64(cfg.ElectionBackoffMaxMs),
		RequestTimeoutMs:     int64(cfg.RequestTimeoutMs),
		RetryBackoffMs:       int64(cfg.RetryBackoffMs),
		IdleIntervalMs:       int64(cfg.IdleIntervalMs),
		Rand:                 rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(cfg.NodeID))),
		HardState:            disk.HardState,
		Log:                  disk.QuorumLog(),
		IdleRecord:           func() []byte { return noOp },
		PeerVersions: func(peer int32, key int16) int16 {
			if v, ok := n.peers.MaxVersion(peer, key); ok {
				return v
			}
			return -1
		},
	})
	if err != nil {
		return nil, err
	}
	if err := n.replayDisk(); err != nil {
		return nil, err
	}
	n.snapshots = NewSnapshotter(disk.fs, disk.Log, PolicyFromConfig(cfg), log)
	n.attachController()
	st := n.core.Status()
	n.status.Store(&st)
	return n, nil
}

// replayDisk loads the newest snapshot and the log after it into the image.
// Only committed records should be applied, but the high watermark is not
// known until a leader says so; so at start the image holds what the latest
// snapshot holds, and the loop applies the log as the high watermark moves.
func (n *Node) replayDisk() error {
	id, ok := n.disk.Log.LatestSnapshot()
	if !ok {
		return nil
	}
	im, _, err := n.disk.LoadSnapshot(id)
	if err != nil {
		return err
	}
	n.ctl.LoadSnapshot(id.EndOffset-1, im)
	return nil
}

// Controller is the node's metadata controller.
func (n *Node) Controller() *controller.Controller { return n.ctl }

// Status is the quorum's state as of the last Ready.
func (n *Node) Status() quorum.Status { return *n.status.Load() }

// Run drives the node until Stop; it returns the first fatal error (a disk
// failure or a safety violation), after which the process must exit.
func (n *Node) Run() error {
	defer close(n.done)
	defer n.peers.Close()
	ticker := time.NewTicker(tickInterval)
	defer ticker.Stop()
	go n.runController()
	go n.runSyncer()
	for {
		select {
		case ev := <-n.events:
			n.handleEvent(ev)
		case r := <-n.syncResults:
			n.onSynced(r)
		case <-ticker.C:
			n.core.Tick(n.nowMs())
		case <-n.stop:
			n.shutdown()
			return n.err
		}
		// Take everything already queued before writing: proposals that
		// arrived during the last fsync share the next one (group commit).
		for drained := false; !drained && n.err == nil; {
			select {
			case ev := <-n.events:
				n.handleEvent(ev)
			default:
				drained = true
			}
		}
		if n.err == nil {
			n.err = n.processReady()
		}
		if n.err != nil {
			n.log.Error().Err(n.err).Msg("quorum loop stopped")
			n.failAll(n.err)
			return n.err
		}
	}
}

// Stop resigns leadership gracefully (EndQuorumEpoch), then stops the loop.
func (n *Node) Stop() error {
	select {
	case <-n.stop:
	default:
		close(n.stop)
	}
	<-n.done
	return n.err
}

func (n *Node) shutdown() {
	n.core.Resign()
	if err := n.processReady(); err != nil {
		n.err = err
	}
	// Give EndQuorumEpoch a moment to leave before the connections close.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) && n.peers.Pending() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	n.failAll(ErrStopped)
	if err := n.joinSync(); err != nil && n.err == nil {
		n.err = err
	}
	n.snapshots.Close()
	if err := n.disk.Close(); err != nil && n.err == nil {
		n.err = err
	}
}

func (n *Node) nowMs() int64 { return time.Now().UnixMilli() }

func (n *Node) handleEvent(ev nodeEvent) {
	var err error
	switch {
	case ev.inbound != nil:
		if (*ev.inbound).Key() == 54 {
			n.log.Info().Msg("received EndQuorumEpoch: the leader is resigning")
		}
		n.nextInbound++
		n.waiters[n.nextInbound] = ev.reply
		err = n.core.Step(quorum.Message{From: -1, To: n.cfg.NodeID, ReqID: n.nextInbound, Request: *ev.inbound})
	case ev.peer != nil:
		m := quorum.Message{From: ev.peer.NodeID, To: n.cfg.NodeID, ReqID: ev.peer.Tag, Response: ev.peer.Response}
		if ev.peer.Err != nil {
			m.Response, m.Err = nil, ev.peer.Err
		}
		err = n.core.Step(m)
	case ev.proposal != nil:
		n.propose(ev.proposal)
	}
	if err != nil {
		n.err = err
	}
}

func (n *Node) propose(p *proposal) {
	st := n.core.Status()
	if st.Role == quorum.RoleLeader && n.activated != st.Epoch {
		n.held = append(n.held, p)
		return
	}
	if p.epoch != 0 && (st.Role != quorum.RoleLeader || st.Epoch != p.epoch) {
		p.done <- ErrNotController
		return
	}
	if p.stamp != nil {
		// On the leader the core appends at its log end; elsewhere Propose
		// fails below and the stamp is never seen.
		p.stamp(st.EndOffset)
	}
	values := make([][]byte, len(p.records))
	for i, r := range p.records {
		values[i] = metadata.EncodeValue(r)
	}
	base, epoch, err := n.core.Propose(values)
	if err != nil {
		if errors.Is(err, quorum.ErrNotLeader) {
			err = ErrNotController
		}
		p.done <- err
		return
	}
	if p.offset != nil {
		p.offset <- base
	}
	n.commitWaits = append(n.commitWaits, commitWait{lastOffset: base + int64(len(values)) - 1, epoch: epoch, done: p.done})
}

// processReady runs the Ready loop: persist (fsync), then send, then
// Advance, until the core has nothing left; only then apply what committed.
// A leader's Ready may be sent first, so that followers write and fsync the
// records while the leader does. Applying last keeps replay off the path of
// the next Fetch or fetch answer, and anything apply proposes (activation
// records) reaches the core after Advance, never between Ready and Advance.
func (n *Node) processReady() error {
	for n.core.HasReady() {
		for n.core.HasReady() {
			rd := n.core.Ready()
			deferSync := rd.SendFirst && rd.MustSync
			if !deferSync && (rd.MustSync || rd.SnapshotWrite != nil) {
				if err := n.joinSync(); err != nil {
					return err
				}
			}
			if rd.SendFirst {
				n.sendAll(rd.Messages)
			}
			if err := n.persist(rd, !deferSync); err != nil {
				return err
			}
			if !rd.SendFirst {
				n.sendAll(rd.Messages)
			}
			if deferSync {
				n.core.AdvanceWritten()
				n.deferSync(syncJob{epoch: rd.SoftState.Epoch, end: n.disk.Log.EndOffset()})
			} else {
				n.core.Advance()
			}
			if rd.SoftState != n.soft {
				n.onSoftState(rd.SoftState)
			}
			n.hw = max(n.hw, rd.HighWatermark)
			st := n.core.Status()
			n.status.Store(&st)
		}
		if err := n.applyCommitted(); err != nil {
			return err
		}
	}
	return nil
}

// persist writes what rd asks for; it fsyncs when rd.MustSync and sync.
func (n *Node) persist(rd quorum.Ready, sync bool) error {
	if rd.HardState != nil {
		if err := n.disk.WriteHardState(*rd.HardState, n.voterIDs); err != nil {
			return err
		}
	}
	if c := rd.SnapshotWrite; c != nil {
		if err := n.writeSnapshotChunk(c); err != nil {
			return err
		}
	}
	if rd.Truncate != nil {
		if err := n.disk.Log.TruncateTo(*rd.Truncate); err != nil {
			return err
		}
	}
	if len(rd.Append) > 0 {
		if err := n.disk.Log.Append(rd.Append); err != nil {
			return err
		}
	}
	if rd.MustSync && sync {
		return n.disk.Log.Sync()
	}
	return nil
}

// writeSnapshotChunk stores a piece of a snapshot fetched from the leader;
// the last piece freezes it (fsync, rename) and the log restarts after it.
func (n *Node) writeSnapshotChunk(c *quorum.SnapshotChunk) error {
	id := storage.SnapshotID{EndOffset: c.ID.EndOffset, Epoch: c.ID.Epoch}
	if c.Position == 0 || n.snapshotSink == nil {
		if n.snapshotSink != nil {
			n.snapshotSink.Abort()
		}
		w, err := n.disk.Log.CreateSnapshot(id)
		if err != nil {
			return err
		}
		n.snapshotSink = w
	}
	if err := n.snapshotSink.Write(c.Data); err != nil {
		return err
	}
	if !c.Done {
		return nil
	}
	w := n.snapshotSink
	n.snapshotSink = nil
	if err := w.Freeze(); err != nil {
		return err
	}
	if err := n.disk.Log.ResetTo(id.EndOffset); err != nil {
		return err
	}
	im, _, err := n.disk.LoadSnapshot(id)
	if err != nil {
		return err
	}
	n.log.Info().Str("snapshot", id.String()).Msg("installed snapshot from the leader")
	n.ctl.LoadSnapshot(id.EndOffset-1, im)
	return nil
}

func (n *Node) sendAll(msgs []quorum.Message) {
	for _, m := range msgs {
		n.send(m)
	}
}

func (n *Node) send(m quorum.Message) {
	if m.Response != nil {
		if reply, ok := n.waiters[m.ReqID]; ok {
			delete(n.waiters, m.ReqID)
			reply <- m.Response
		}
		return
	}
	n.peers.Send(m.To, m.ReqID, m.Request)
}

// applyCommitted replays newly committed records into the image, answers
// proposals that committed, and lets a new leader write its activation
// records.
func (n *Node) applyCommitted() error {
	if n.hw > n.ctl.Applied()+1 {
		if err := n.replayTo(n.hw); err != nil {
			return err
		}
		n.snapshots.MaybeSnapshot(n.hw)
	}
	n.completeCommitWaits()
	n.maybeActivate()
	return nil
}

func (n *Node) onSoftState(s quorum.SoftState) {
	prev := n.soft
	n.soft = s
	if prev.Role != s.Role || prev.Epoch != s.Epoch || prev.LeaderID != s.LeaderID {
		n.log.Info().Str("role", s.Role.String()).Int32("epoch", s.Epoch).Int32("leader", s.LeaderID).Msg("quorum state")
	}
	if prev.Role == quorum.RoleLeader && (s.Role != quorum.RoleLeader || s.Epoch != prev.Epoch) {
		for _, w := range n.commitWaits {
			w.done <- ErrNotController
		}
		n.commitWaits = nil
	}
	if s.Role != quorum.RoleLeader {
		n.failHeld(ErrNotController)
	}
}

// failHeld answers the proposals held for an activation that will not come.
func (n *Node) failHeld(err error) {
	for _, p := range n.held {
		p.done <- err
	}
	n.held = nil
}

// replayTo applies every record below hw that the image has not seen.
func (n *Node) replayTo(hw int64) error {
	from := max(n.ctl.Applied()+1, n.disk.Log.StartOffset())
	end, err := forEachLogRecord(n.disk.Log, from, hw, func(offset int64, rec metadata.Record, _ batch.Record) error {
		if rec == nil {
			return nil // control records shape the quorum, not the image
		}
		if err := n.ctl.Replay(offset, rec); err != nil {
			n.log.Warn().Err(err).Msg("skipping a record the image rejects")
		}
		return nil
	})
	n.ctl.MarkApplied(end - 1)
	return err
}

// ErrNotController is returned to proposals when this node is, or stops
// being, anything but the active controller.
var ErrNotController = errors.New("server: not the active controller")

func (n *Node) completeCommitWaits() {
	i := 0
	for ; i < len(n.commitWaits); i++ {
		w := n.commitWaits[i]
		if w.lastOffset >= n.hw {
			break
		}
		w.done <- nil
	}
	n.commitWaits = n.commitWaits[i:]
}

// maybeActivate makes a new leader write its activation records once it has
// replayed every record committed before its epoch: that is known only once
// a record of its own epoch commits (the high watermark alone may still be
// an earlier epoch's, below records the previous leader wrote, such as its
// own bootstrap records, which would then be written twice).
func (n *Node) maybeActivate() {
	if n.soft.Role != quorum.RoleLeader || n.activated == n.soft.Epoch || !n.soft.EpochCommitted {
		return
	}
	n.activated = n.soft.Epoch
	if recs := n.ctl.ActivationRecords(); len(recs) > 0 {
		n.log.Info().Int("records", len(recs)).Msg("writing bootstrap records into the empty metadata log")
		n.propose(&proposal{records: recs, done: make(chan error, 1)})
	}
	held := n.held
	n.held = nil
	for _, p := range held {
		n.propose(p)
	}
}

func (n *Node) failAll(err error) {
	n.failHeld(err)
	for id, reply := range n.waiters {
		close(reply)
		delete(n.waiters, id)
	}
	for _, w := range n.commitWaits {
		w.done <- err
	}
	n.commitWaits = nil
}

// deliverPeerResult is called by the peer client's goroutines.
func (n *Node) deliverPeerResult(r PeerResult) {
	if r.Err != nil {
		n.log.Debug().Err(r.Err).Int32("peer", r.NodeID).Str("api", kmsg.NameForKey(r.Request.Key())).Msg("peer request failed")
	} else if e := n.log.Trace(); e.Enabled() {
		e.Int32("peer", r.NodeID).Str("api", kmsg.NameForKey(r.Request.Key())).Interface("response", r.Response).Msg("peer response")
	}
	select {
	case n.events <- nodeEvent{peer: &r}:
	case <-n.done:
	}
}

// Propose writes records through the quorum at the active controller and
// waits until they commit. It returns the offset of the first record (a
// broker's epoch is the offset of its registration record).
func (n *Node) Propose(ctx context.Context, records []metadata.Record) (int64, error) {
	p := &proposal{records: records, offset: make(chan int64, 1), done: make(chan error, 1)}
	select {
	case n.events <- nodeEvent{proposal: p}:
	case <-n.done:
		return -1, ErrStopped
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	select {
	case err := <-p.done:
		offset := int64(-1)
		select {
		case offset = <-p.offset:
		default:
		}
		return offset, err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// Raft implements Backend.
func (n *Node) Raft(ctx context.Context, r *Request) (kmsg.Response, error) {
	reply := make(chan kmsg.Response, 1)
	select {
	case n.events <- nodeEvent{inbound: &r.Body, reply: reply}:
	case <-n.done:
		return nil, ErrStopped
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case resp, ok := <-reply:
		if !ok {
			return nil, ErrStopped
		}
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ClusterID implements Backend.
func (n *Node) ClusterID() string { return n.disk.Meta.ClusterID }

// Features implements Backend.
func (n *Node) Features() (map[string]int16, int64) {
	levels, epoch := n.ctl.Features()
	// As Apache's controller does, report the quorum's own kraft.version.
	levels[controller.KRaftVersionFeature] = n.disk.KRaftVersion
	return levels, epoch
}

// ActiveController implements Backend.
func (n *Node) ActiveController() int32 { return n.Status().LeaderID }

// Controllers implements Backend: the registered controllers with their
// endpoint on listener. Until a controller has registered, the voters from
// the configuration stand in, so tools can find the leader of a new quorum.
func (n *Node) Controllers(listener string) []kmsg.DescribeClusterResponseBroker {
	var out []kmsg.DescribeClusterResponseBroker
	for id, reg := range n.ctl.RegisteredControllers() {
		for _, e := range reg.EndPoints {
			if e.Name == listener {
				out = append(out, kmsg.DescribeClusterResponseBroker{NodeID: id, Host: e.Host, Port: int32(e.Port), Rack: nil})
			}
		}
	}
	if len(out) > 0 {
		return sortBrokers(out)
	}
	voters, _, _ := n.disk.InitialVoters(n.cfg)
	for id, eps := range voters {
		for _, e := range eps {
			if e.Name == listener {
				out = append(out, kmsg.DescribeClusterResponseBroker{NodeID: id, Host: e.Host, Port: int32(e.Port)})
			}
		}
	}
	return sortBrokers(out)
}
