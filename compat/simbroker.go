package compat

import (
	"context"
	cryptorand "crypto/rand"
	"errors"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat cadence of Apache's BrokerLifecycleManager: every
// broker.heartbeat.interval.ms once running, every 10 ms while starting and
// not yet caught up, and a backoff after a failure.
const (
	HeartbeatInterval  = 2 * time.Second
	startingHeartbeat  = 10 * time.Millisecond
	heartbeatRetryWait = 100 * time.Millisecond
	simRequestTimeout  = 10 * time.Second
)

// SimBroker is a broker reduced to what its controller sees: one
// connection to the active controller on which it sends ApiVersions, one
// BrokerRegistration, then BrokerHeartbeats. It serves no clients and holds
// no partitions; the listener it registers is a free 127.0.0.1 port nobody
// listens on.
type SimBroker struct {
	ID    int32
	Epoch int64  // broker epoch from the registration; -1 before
	Rack  string // broker.rack it registers with; "" for none

	// kill ends this broker alone (Kill); nil until the fleet starts it.
	kill context.CancelFunc
	// lastBeat is when the last heartbeat the controller answered while
	// running was sent (unix nanoseconds), where its session restarted.
	lastBeat atomic.Int64

	fleet       *SimFleet
	incarnation [16]byte
	logDir      [16]byte
	port        uint16

	conn     *Conn
	connAddr string
}

func newSimBroker(f *SimFleet, id int32) (*SimBroker, error) {
	b := &SimBroker{ID: id, Epoch: -1, fleet: f}
	if _, err := cryptorand.Read(b.incarnation[:]); err != nil {
		return nil, err
	}
	if _, err := cryptorand.Read(b.logDir[:]); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b.port = uint16(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	return b, nil
}

// run registers, then heartbeats until ctx ends.
func (b *SimBroker) run(ctx context.Context) {
	defer b.disconnect()
	for ctx.Err() == nil && b.Epoch < 0 {
		if err := b.register(ctx); err != nil {
			b.fleet.countError("BrokerRegistration", err)
			sleepCtx(ctx, HeartbeatInterval)
		}
	}
	// STARTING: heartbeat with WantFence until the controller says we are
	// caught up; then ask to be unfenced, as Apache's broker does once it
	// has published its first metadata image.
	caughtUp, fenced := false, true
	for ctx.Err() == nil && !caughtUp {
		resp, err := b.heartbeat(ctx, true)
		if err != nil {
			b.fleet.countError("BrokerHeartbeat", err)
			sleepCtx(ctx, heartbeatRetryWait)
			continue
		}
		caughtUp, fenced = resp.IsCaughtUp, resp.IsFenced
		if !caughtUp {
			sleepCtx(ctx, startingHeartbeat)
		}
	}
	for ctx.Err() == nil && fenced {
		resp, err := b.heartbeat(ctx, false)
		if err != nil {
			b.fleet.countError("BrokerHeartbeat", err)
			sleepCtx(ctx, heartbeatRetryWait)
			continue
		}
		if fenced = resp.IsFenced; fenced {
			sleepCtx(ctx, HeartbeatInterval)
		}
	}
	if ctx.Err() != nil {
		return
	}
	b.fleet.unfenced.Add(1)
	// RUNNING. Real brokers start at different moments, so their
	// heartbeats spread over the interval; a simulated fleet that started
	// at once would otherwise beat in step and measure a burst.
	sleepCtx(ctx, rand.N(HeartbeatInterval))
	tick := time.NewTicker(HeartbeatInterval)
	defer tick.Stop()
	for ctx.Err() == nil {
		start := time.Now()
		resp, err := b.heartbeat(ctx, false)
		took := time.Since(start)
		switch {
		case err != nil:
			b.fleet.countError("BrokerHeartbeat", err)
		case resp.IsFenced:
			b.fleet.countError("BrokerHeartbeat", errors.New("fenced while running"))
		default:
			b.fleet.heartbeats.Add(took)
			b.lastBeat.Store(start.UnixNano())
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// register sends BrokerRegistration v4: the finalized features the fleet
// read from ApiVersions, one log directory, one PLAINTEXT listener.
func (b *SimBroker) register(ctx context.Context) error {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(4)
	req.BrokerID, req.ClusterID, req.IncarnationID = b.ID, b.fleet.ClusterID, b.incarnation
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: b.port, SecurityProtocol: 0}}
	req.Features = b.fleet.features
	req.LogDirs = [][16]byte{b.logDir}
	req.PreviousBrokerEpoch = -1
	if b.Rack != "" {
		req.Rack = &b.Rack
	}
	r, err := b.request(ctx, req)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.BrokerRegistrationResponse)
	if err := b.checkCode(resp.ErrorCode); err != nil {
		return err
	}
	b.Epoch = resp.BrokerEpoch
	return nil
}

// heartbeat sends BrokerHeartbeat v1 with the metadata offset the fleet's
// watcher has read.
func (b *SimBroker) heartbeat(ctx context.Context, wantFence bool) (*kmsg.BrokerHeartbeatResponse, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(1)
	req.BrokerID, req.BrokerEpoch = b.ID, b.Epoch
	req.CurrentMetadataOffset = b.fleet.watcher.Committed()
	req.WantFence = wantFence
	r, err := b.request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.BrokerHeartbeatResponse)
	if err := b.checkCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	return resp, nil
}

// checkCode turns an error code into an error, and on NOT_CONTROLLER
// drops the connection and the locator's leader so the next request goes to
// the new active controller.
func (b *SimBroker) checkCode(code int16) error {
	if code == 0 {
		return nil
	}
	if code == kerr.NotController.Code {
		b.fleet.locator.Invalidate(b.connAddr)
		b.disconnect()
	}
	return kerr.ErrorForCode(code)
}

// request sends req on the broker's connection to the active controller,
// connecting first (with ApiVersions, as Apache's NetworkClient does on
// every new connection) when there is none.
func (b *SimBroker) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if b.conn == nil {
		if err := b.connect(ctx); err != nil {
			return nil, err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, simRequestTimeout)
	defer cancel()
	resp, err := b.conn.Request(rctx, req)
	if err != nil {
		b.fleet.locator.Invalidate(b.connAddr)
		b.disconnect()
	}
	return resp, err
}

func (b *SimBroker) connect(ctx context.Context) error {
	addr, _, err := b.fleet.locator.Leader(ctx)
	if err != nil {
		return err
	}
	conn, err := Dial(ctx, addr)
	if err != nil {
		b.fleet.locator.Invalidate(addr)
		return err
	}
	if _, err := conn.Request(ctx, simApiVersionsRequest()); err != nil {
		conn.Close()
		b.fleet.locator.Invalidate(addr)
		return err
	}
	b.conn, b.connAddr = conn, addr
	return nil
}

// LastHeartbeat is when the last answered heartbeat of the running broker
// was sent: its session expires a session timeout after (at the latest:
// the controller took it a little later).
func (b *SimBroker) LastHeartbeat() time.Time { return time.Unix(0, b.lastBeat.Load()) }

// Kill stops the broker as SIGKILL would: no more heartbeats, its
// connection closed. The controller fences it once its session expires.
func (b *SimBroker) Kill() {
	if b.kill != nil {
		b.kill()
	}
}

func (b *SimBroker) disconnect() {
	if b.conn != nil {
		b.conn.Close()
		b.conn = nil
	}
}

// simApiVersionsRequest is ApiVersions v4, what a 4.1 broker sends.
func simApiVersionsRequest() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kraftd-simbroker", "0"
	return req
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
