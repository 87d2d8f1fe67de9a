package controller

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The blocking wrapper: the context-bound methods request handlers call
// from their own goroutines. Each hands its input to the goroutine that
// owns the core (Driver: the node's loop, through its controller seam) and
// waits for the answer, which the core hands to a buffered channel. The
// wrapper holds no lock and no core of its own: the driver runs every
// input in turn, with the time, so the core's inputs are the driver's
// events and nothing else.

// Driver hands input to the goroutine that owns the core, which runs it
// with the time it gives; it reports false, without running input, when
// there is no core to run it (the node stopped). Once it reported true,
// input runs, even when the node stops meanwhile. It must never be called
// from that goroutine itself.
type Driver func(input func(core *Core, now time.Time)) bool

// Serve makes the controller able to serve operations through drive. It
// is called once, before requests arrive.
func (c *Controller) Serve(drive Driver) { c.drive = drive }

// do gives the core one input; false when there is none.
func (c *Controller) do(input func(core *Core, now time.Time)) bool {
	if c.drive == nil {
		return false
	}
	return c.drive(input)
}

// run gives the core one input and waits until it has run; false when
// there is no core.
func (c *Controller) run(input func(core *Core, now time.Time)) bool {
	ran := make(chan struct{})
	if !c.do(func(core *Core, now time.Time) { input(core, now); close(ran) }) {
		return false
	}
	<-ran
	return true
}

// await runs one operation and waits for its answer or ctx. Should ctx end
// first, the operation still runs and may commit; only the wait ends.
func await[T any](ctx context.Context, c *Controller, start func(core *Core, now time.Time, answer func(T, error))) (T, error) {
	return begin(c, start).Wait(ctx)
}

// Answer is the answer of an operation given to the core without waiting:
// the core may have answered it already (Ready), or answers it later, from
// the goroutine that drives it (Wait).
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
// waiting; its answer comes as Core.BrokerHeartbeat gives it.
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
	c.run(func(core *Core, _ time.Time) { active = core.Leading() })
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

// IsActive reports whether this node is the active controller.
func (c *Controller) IsActive() bool {
	active := false
	c.run(func(core *Core, _ time.Time) { active = core.Leading() })
	return active
}

// RegistrationToSend: see Core.RegistrationToSend.
func (c *Controller) RegistrationToSend() *kmsg.ControllerRegistrationRequest {
	var req *kmsg.ControllerRegistrationRequest
	c.run(func(core *Core, _ time.Time) { req = core.RegistrationToSend() })
	return req
}
