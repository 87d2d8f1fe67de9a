package controller

import (
	"context"
	crand "crypto/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// The concurrent wrapper: the blocking, context-bound methods request
// handlers call from their own goroutines. Each takes op, gives the core
// its input with the time from Settings.Now, and waits, without op, for
// the answer, which the core hands to a buffered channel. Nothing holding
// op ever waits for the node loop: the core does not block, and
// Log.Propose returns at once; so the node loop, which never takes op,
// cannot deadlock with it.
//
// The log's notifications (stamp, done) must run under op too, but the
// goroutine that brings them should not queue behind every handler
// building an operation: the answers of a whole pipeline wait on it. So a
// notification goes into inbox, and runs at once if op is free, else by
// whoever holds op, before letting go of it (unlock).

// Activate makes the controller able to serve operations through log,
// whose stamp and done may come from any goroutine but never from inside
// Propose. It is called once, before requests arrive.
func (c *Controller) Activate(log Log, s Settings) {
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.TopicIDs == nil {
		s.TopicIDs = crand.Reader
	}
	c.op.Lock()
	defer c.unlock()
	c.clock = s.Now
	var locked Log = lockedLog{log, c}
	if k, ok := log.(KRaftLog); ok {
		locked = lockedKRaftLog{lockedLog{log, c}, k}
	}
	c.core = NewCore(c, locked, s)
}

// lockedLog hands the core's callbacks to the log as notifications, so
// they run serialized with every other input of the core.
type lockedLog struct {
	Log
	c *Controller
}

func (l lockedLog) Propose(epoch int32, records []metadata.Record, stamp func(int64), done func(int64, error)) error {
	var notifyStamp func(int64)
	if stamp != nil {
		notifyStamp = func(first int64) { l.c.notify(func() { stamp(first) }) }
	}
	return l.Log.Propose(epoch, records, notifyStamp, func(first int64, err error) {
		l.c.notify(func() { done(first, err) })
	})
}

// lockedKRaftLog is lockedLog over a log that can change kraft.version.
type lockedKRaftLog struct {
	lockedLog
	k KRaftLog
}

func (l lockedKRaftLog) KRaftVersion() int16 { return l.k.KRaftVersion() }

func (l lockedKRaftLog) ProposeKRaftUpgrade(epoch int32, version int16, validateOnly bool, records []metadata.Record, done func(int64, error)) error {
	return l.k.ProposeKRaftUpgrade(epoch, version, validateOnly, records, func(first int64, err error) {
		l.c.notify(func() { done(first, err) })
	})
}

// notify runs f under op, now or, if op is held, before it is let go.
func (c *Controller) notify(f func()) {
	c.inboxMu.Lock()
	c.inbox = append(c.inbox, f)
	c.inboxMu.Unlock()
	if c.op.TryLock() {
		c.unlock()
	}
}

// unlock runs the notifications waiting in the inbox, in order, and lets
// go of op. A notification queued after the last look but before op is
// free found op held, so unlock looks again once op is free: no
// notification is left behind.
func (c *Controller) unlock() {
	for {
		for {
			c.inboxMu.Lock()
			batch := c.inbox
			c.inbox = nil
			c.inboxMu.Unlock()
			if len(batch) == 0 {
				break
			}
			for _, f := range batch {
				f()
			}
		}
		c.op.Unlock()
		c.inboxMu.Lock()
		more := len(c.inbox) > 0
		c.inboxMu.Unlock()
		if !more || !c.op.TryLock() {
			return
		}
	}
}

// do gives the core one input under op; false when not activated.
func (c *Controller) do(input func(core *Core, now time.Time)) bool {
	c.op.Lock()
	defer c.unlock()
	if c.core == nil {
		return false
	}
	input(c.core, c.clock())
	return true
}

// await runs one operation and waits for its answer or ctx. Should ctx end
// first, the operation still runs and may commit; only the wait ends.
func await[T any](ctx context.Context, c *Controller, start func(core *Core, now time.Time, answer func(T, error))) (T, error) {
	return begin(c, start).Wait(ctx)
}

// Answer is the answer of an operation given to the core without waiting:
// the core may have answered it at once (Ready), or answers it later, from
// whichever goroutine then holds op (Wait).
type Answer[T any] struct {
	ch  chan answered[T]
	got bool
	v   T
	err error
}

type answered[T any] struct {
	v   T
	err error
}

// begin gives the core one operation and returns its answer to come.
func begin[T any](c *Controller, start func(core *Core, now time.Time, answer func(T, error))) *Answer[T] {
	a := &Answer[T]{ch: make(chan answered[T], 1)}
	if !c.do(func(core *Core, now time.Time) {
		start(core, now, func(v T, err error) { a.ch <- answered[T]{v, err} })
	}) {
		a.got, a.err = true, ErrNotController
	}
	return a
}

// Ready reports whether the answer is in, without waiting. One goroutine
// at a time may call Ready and Wait.
func (a *Answer[T]) Ready() bool {
	if !a.got {
		select {
		case r := <-a.ch:
			a.got, a.v, a.err = true, r.v, r.err
		default:
		}
	}
	return a.got
}

// Wait returns the answer once it is in, or ctx's error if ctx ends first;
// the operation goes on either way.
func (a *Answer[T]) Wait(ctx context.Context) (T, error) {
	if a.Ready() {
		return a.v, a.err
	}
	select {
	case r := <-a.ch:
		a.got, a.v, a.err = true, r.v, r.err
		return a.v, a.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// noResult adapts an answer that carries only an error.
type noResult struct{}

func awaitErr(ctx context.Context, c *Controller, start func(core *Core, now time.Time, answer func(error))) error {
	_, err := await(ctx, c, func(core *Core, now time.Time, answer func(noResult, error)) {
		start(core, now, func(err error) { answer(noResult{}, err) })
	})
	return err
}

// RegisterBroker: see Core.RegisterBroker.
func (c *Controller) RegisterBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (int64, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(int64, error)) { core.RegisterBroker(now, req, answer) })
}

// BrokerHeartbeat: see Core.BrokerHeartbeat.
func (c *Controller) BrokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	return c.StartBrokerHeartbeat(req).Wait(ctx)
}

// StartBrokerHeartbeat gives the core a heartbeat and returns without
// waiting. A heartbeat that writes nothing while no write is pending is
// answered before it returns (Ready), so a server can answer most of a
// fleet's heartbeats on the connection's own goroutine; one that writes
// (unfence, fence, controlled shutdown), or read records not yet
// committed, is answered once they have committed, as with BrokerHeartbeat.
func (c *Controller) StartBrokerHeartbeat(req *kmsg.BrokerHeartbeatRequest) *Answer[*kmsg.BrokerHeartbeatResponse] {
	return begin(c, func(core *Core, now time.Time, answer func(*kmsg.BrokerHeartbeatResponse, error)) {
		core.BrokerHeartbeat(now, req, answer)
	})
}

// UnregisterBroker: see Core.UnregisterBroker.
func (c *Controller) UnregisterBroker(ctx context.Context, id int32) error {
	return awaitErr(ctx, c, func(core *Core, now time.Time, answer func(error)) { core.UnregisterBroker(now, id, answer) })
}

// RegisterController: see Core.RegisterController.
func (c *Controller) RegisterController(ctx context.Context, req *kmsg.ControllerRegistrationRequest) error {
	return awaitErr(ctx, c, func(core *Core, now time.Time, answer func(error)) { core.RegisterController(now, req, answer) })
}

// AllocateProducerIDs: see Core.AllocateProducerIDs.
func (c *Controller) AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64) (int64, int32, error) {
	type block struct {
		start  int64
		length int32
	}
	b, err := await(ctx, c, func(core *Core, now time.Time, answer func(block, error)) {
		core.AllocateProducerIDs(now, brokerID, brokerEpoch, func(start int64, length int32, err error) { answer(block{start, length}, err) })
	})
	if err != nil {
		return -1, 0, err
	}
	return b.start, b.length, nil
}

// CreateTopics: see Core.CreateTopics.
func (c *Controller) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.CreateTopicsResponse, error)) {
		core.CreateTopics(now, req, answer)
	})
}

// DeleteTopics: see Core.DeleteTopics.
func (c *Controller) DeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.DeleteTopicsResponse, error)) {
		core.DeleteTopics(now, req, answer)
	})
}

// CreatePartitions: see Core.CreatePartitions.
func (c *Controller) CreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.CreatePartitionsResponse, error)) {
		core.CreatePartitions(now, req, answer)
	})
}

// AlterPartition: see Core.AlterPartition.
func (c *Controller) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.AlterPartitionResponse, error)) {
		core.AlterPartition(now, req, answer)
	})
}

// ElectLeaders: see Core.ElectLeaders.
func (c *Controller) ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.ElectLeadersResponse, error)) {
		core.ElectLeaders(now, req, answer)
	})
}

// IncrementalAlterConfigs: see Core.IncrementalAlterConfigs.
func (c *Controller) IncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.IncrementalAlterConfigsResponse, error)) {
		core.IncrementalAlterConfigs(now, req, answer)
	})
}

// AlterConfigs: see Core.AlterConfigs.
func (c *Controller) AlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.AlterConfigsResponse, error)) {
		core.AlterConfigs(now, req, answer)
	})
}

// UpdateFeatures: see Core.UpdateFeatures.
func (c *Controller) UpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) (*kmsg.UpdateFeaturesResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.UpdateFeaturesResponse, error)) {
		core.UpdateFeatures(now, req, answer)
	})
}

// AssignReplicasToDirs: see Core.AssignReplicasToDirs.
func (c *Controller) AssignReplicasToDirs(ctx context.Context, req *kmsg.AssignReplicasToDirsRequest) (*kmsg.AssignReplicasToDirsResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.AssignReplicasToDirsResponse, error)) {
		core.AssignReplicasToDirs(now, req, answer)
	})
}

// FenceStaleBrokers fences at most one broker whose session has expired
// and reports whether it did (see Core.FenceStaleBrokers). It is a no-op
// on a node that is not the active controller.
func (c *Controller) FenceStaleBrokers(ctx context.Context) (bool, error) {
	active := false
	c.do(func(core *Core, _ time.Time) {
		if _, active = core.log.Leader(); !active {
			core.dropSpec()
		}
	})
	if !active {
		return false, nil
	}
	return await(ctx, c, func(core *Core, now time.Time, answer func(bool, error)) { core.FenceStaleBrokers(now, answer) })
}

// BalanceLeaders moves leadership back to preferred replicas and reports
// how many partitions it moved (see Core.BalanceLeaders).
func (c *Controller) BalanceLeaders(ctx context.Context) (int, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(int, error)) { core.BalanceLeaders(now, answer) })
}

// Tick gives the core its timed work (Core.Tick) at the current time.
func (c *Controller) Tick() {
	c.do(func(core *Core, now time.Time) { core.Tick(now) })
}

// IsActive reports whether this node is the active controller.
func (c *Controller) IsActive() bool {
	active := false
	c.do(func(core *Core, _ time.Time) { _, active = core.log.Leader() })
	return active
}

// SelfRegistration is the ControllerRegistration this controller sends for
// itself: its listeners and the feature ranges it supports.
func (c *Controller) SelfRegistration() *kmsg.ControllerRegistrationRequest {
	var s Settings
	c.do(func(core *Core, _ time.Time) { s = core.settings })
	return selfRegistration(&s)
}
