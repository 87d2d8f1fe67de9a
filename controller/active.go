package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// Quorum is what the active controller needs from the consensus layer.
type Quorum interface {
	// Append hands records to the log without waiting for them to commit.
	// Appends reach the log in call order, and only while this node leads
	// epoch: since a node never leads an epoch again once it has lost it,
	// the appends of an epoch that land are a prefix of those made, so a
	// write never lands without every write made before it for the epoch.
	//
	// stamp, if not nil, is called with the offset the first record gets
	// when the log takes them, before they are encoded, so a record may
	// carry its own offset (a broker epoch is the offset of its
	// registration). done is called exactly once, from any goroutine: with
	// nil once the records have committed and been replayed into the
	// image, else with the reason they may never be (ErrNotController when
	// this node is not, or stops being, the leader of epoch). Append
	// returns an error, and never calls done, only when it could not hand
	// the records over.
	Append(ctx context.Context, epoch int32, records []metadata.Record, stamp func(firstOffset int64), done func(firstOffset int64, err error)) error
	// Leader reports whether this node leads the quorum, and in which epoch.
	Leader() (epoch int32, ok bool)
}

// ErrNotController means the operation needs the active controller and this
// node is not it (any more).
var ErrNotController = errors.New("controller: not the active controller")

// Settings are the active controller's configuration.
type Settings struct {
	NodeID    int32
	ClusterID string
	// SessionTimeout is broker.session.timeout.ms: a broker that has not
	// heartbeaten for this long is fenced.
	SessionTimeout time.Duration
	// DefaultPartitions and DefaultReplicationFactor are num.partitions and
	// default.replication.factor, used when CreateTopics asks for -1.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// UncleanLeaderElection is unclean.leader.election.enable.
	UncleanLeaderElection bool
	// KRaftVersion is the quorum's kraft.version, which brokers must support.
	KRaftVersion int16
	// Rand drives replica placement; nil starts every topic at the first broker.
	Rand *rand.Rand
	// Incarnation and Listeners describe this controller for its own
	// ControllerRegistration.
	Incarnation [16]byte
	Listeners   []Listener
	// Now is the clock; tests inject their own.
	Now func() time.Time
}

// Listener is one of this controller's advertised listeners.
type Listener struct {
	Name string
	Host string
	Port uint16
	// SecurityProtocol is Apache's id (0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT,
	// 3 SASL_SSL).
	SecurityProtocol int16
}

// SelfRegistration is the ControllerRegistration this controller sends for
// itself: its listeners and the feature ranges it supports.
func (c *Controller) SelfRegistration() *kmsg.ControllerRegistrationRequest {
	c.op.Lock()
	s := c.settings
	c.op.Unlock()
	req := kmsg.NewPtrControllerRegistrationRequest()
	req.ControllerID, req.IncarnationID = s.NodeID, s.Incarnation
	for _, l := range s.Listeners {
		req.Listeners = append(req.Listeners, kmsg.ControllerRegistrationRequestListener{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	for _, f := range SupportedFeatures {
		req.Features = append(req.Features, kmsg.ControllerRegistrationRequestFeature{Name: f.Name, MinSupportedVersion: f.Min, MaxSupportedVersion: f.Max})
	}
	return req
}

// Error is a Kafka error code with Apache's message, returned by operations
// that fail as a whole.
type Error struct {
	Code    int16
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return kerr.ErrorForCode(e.Code).Error()
	}
	return fmt.Sprintf("%v: %s", kerr.ErrorForCode(e.Code), e.Message)
}

func apiErr(code int16, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode maps an operation error to a Kafka error code and message:
// ErrNotController to NOT_CONTROLLER, a context error to REQUEST_TIMED_OUT,
// anything unexpected to UNKNOWN_SERVER_ERROR.
func ErrorCode(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	var e *Error
	switch {
	case errors.As(err, &e):
		if e.Message == "" {
			return e.Code, nil
		}
		m := e.Message
		return e.Code, &m
	case errors.Is(err, ErrNotController):
		return kerr.NotController.Code, nil
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code, nil
	}
	m := err.Error()
	return kerr.UnknownServerError.Code, &m
}

// Activate makes the controller able to serve operations through q. It is
// called once, before requests arrive.
func (c *Controller) Activate(q Quorum, s Settings) {
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.SessionTimeout <= 0 {
		s.SessionTimeout = 9 * time.Second
	}
	if s.DefaultPartitions <= 0 {
		s.DefaultPartitions = 1
	}
	if s.DefaultReplicationFactor <= 0 {
		s.DefaultReplicationFactor = 1
	}
	c.op.Lock()
	defer c.op.Unlock()
	c.quorum, c.settings = q, s
	c.readyEpoch = -1
}

// written is where an operation's effects end in the log: first and last
// are the offsets of its own records, or, for an operation that wrote
// nothing, first is -1 and last is the end of the latest write it read
// (-1 when it read only committed records).
type written struct{ first, last int64 }

var nothingWritten = written{-1, -1}

// exec runs one controller operation. Operations are built one at a time,
// each against the speculative image, which holds the effects of every
// earlier operation whether committed or not; so many may be in flight,
// and each is answered once its records have committed, in log order.
// build sees the speculative image and must not keep references into it;
// it returns the records to write (none for a read or a rejected request).
// An operation that writes nothing may have read records not yet
// committed, so it is answered only once those have (as Apache does).
func (c *Controller) exec(ctx context.Context, build func(im *metadata.Image) ([]metadata.Record, func(int64), error)) (written, error) {
	c.op.Lock()
	if err := c.ready(ctx); err != nil {
		c.op.Unlock()
		return nothingWritten, err
	}
	records, stamp, err := build(c.spec)
	if err != nil || len(records) == 0 {
		latest, failures := c.pipe.latest()
		if failures != c.specFailures {
			// What it read may include records that will never commit.
			c.spec = nil
			c.op.Unlock()
			return nothingWritten, ErrNotController
		}
		c.op.Unlock()
		if latest == nil {
			return nothingWritten, err
		}
		if werr := latest.wait(ctx); werr != nil {
			return nothingWritten, werr
		}
		return written{-1, latest.last()}, err
	}
	w, err := c.submit(ctx, records, stamp)
	c.op.Unlock()
	if err != nil {
		return nothingWritten, err
	}
	if err := w.wait(ctx); err != nil {
		return nothingWritten, err
	}
	return written{w.first, w.last()}, nil
}

// submit applies an operation's records to the speculative image and hands
// them to the quorum. Called with c.op held, which keeps the order of the
// image and of the log the same.
func (c *Controller) submit(ctx context.Context, records []metadata.Record, stamp func(int64)) (*pendingWrite, error) {
	if _, failures := c.pipe.latest(); failures != c.specFailures {
		// An earlier write failed after this operation was built; the
		// quorum would refuse this one too.
		c.spec = nil
		return nil, ErrNotController
	}
	if stamp == nil {
		if _, err := c.spec.ApplyAll(records); err != nil {
			c.spec = nil
			return nil, fmt.Errorf("controller: the records of an operation do not apply: %w", err)
		}
	}
	// Records that carry their own offset reach the speculative image
	// only once the log has given them one; the next operation waits for
	// that (below), which costs one pass of the quorum loop, and only
	// registrations of a new broker incarnation need it.
	taken := make(chan struct{})
	count := len(records)
	onTaken := func(first int64) {
		c.noteOwnWrite(first, count)
		if stamp != nil {
			stamp(first)
		}
		close(taken)
	}
	w := c.pipe.add(count)
	if err := c.quorum.Append(ctx, c.readyEpoch, records, onTaken, func(first int64, err error) { c.pipe.settle(w, first, err) }); err != nil {
		// Never handed over: the log will not hold what the speculative
		// image does.
		c.pipe.settle(w, -1, err)
		c.spec = nil
		return nil, err
	}
	if stamp == nil {
		return w, nil
	}
	select {
	case <-taken:
	case <-w.settled:
	case <-ctx.Done():
	}
	select {
	case <-taken:
		if _, err := c.spec.ApplyAll(records); err != nil {
			c.spec = nil
		}
		return w, nil
	default:
	}
	select {
	case <-w.settled:
		// Refused: the failure count makes the next operation rebuild.
		return w, nil
	default:
		// It may still be taken; whether it is shows once it settles.
		c.spec = nil
		return nil, ctx.Err()
	}
}

// ready checks that this node is the active controller and that the
// speculative image is usable. The first time in a leader epoch it waits
// until the image holds every record committed before the epoch began: a
// record of the new epoch committing proves that. It also starts the
// epoch's broker sessions afresh, as Apache does on activation: every
// registered broker gets a full session from now. After a failed write, or
// a record in the log that is not the active side's own, it rebuilds the
// speculative image from the committed one once no write is pending.
// Called with c.op held.
func (c *Controller) ready(ctx context.Context) error {
	if c.quorum == nil {
		return ErrNotController
	}
	epoch, ok := c.quorum.Leader()
	if !ok {
		c.spec = nil
		return ErrNotController
	}
	if c.readyEpoch == epoch {
		if _, failures := c.pipe.latest(); failures != c.specFailures || c.diverged.Load() {
			c.spec = nil
		}
		if c.spec == nil {
			return c.rebuildSpec(ctx)
		}
		return nil
	}
	c.spec = nil
	// On a log that has never held a metadata.version the node first writes
	// the bootstrap records (ActivationRecords). Nothing may precede them:
	// an Apache follower that commits a record before any metadata.version
	// stops with a fatal fault. So until they have committed, this node is
	// not yet an active controller; callers retry.
	c.mu.RLock()
	_, bootstrapped := c.image.Features[MetadataVersionFeature]
	c.mu.RUnlock()
	if !bootstrapped && len(c.bootstrap) > 0 {
		return ErrNotController
	}
	// Writes of an earlier leadership settle first (the loss of it fails
	// them), so that none is pending once the barrier has committed.
	if err := c.pipe.drain(ctx); err != nil {
		return err
	}
	w := c.pipe.add(1)
	if err := c.quorum.Append(ctx, epoch, []metadata.Record{&metadata.NoOpRecord{}}, nil, func(first int64, err error) { c.pipe.settle(w, first, err) }); err != nil {
		c.pipe.settle(w, -1, err)
		return err
	}
	if err := w.wait(ctx); err != nil {
		return err
	}
	now := c.settings.Now()
	c.sessions = newSessions(c.settings.SessionTimeout)
	c.mu.RLock()
	for id, b := range c.image.Brokers {
		c.sessions.register(id, b.BrokerEpoch, b.Fenced, now)
	}
	c.mu.RUnlock()
	c.readyEpoch = epoch
	return c.rebuildSpec(ctx)
}

// rebuildSpec makes the speculative image a copy of the committed one, once
// every pending write has committed or failed. Called with c.op held.
func (c *Controller) rebuildSpec(ctx context.Context) error {
	if err := c.pipe.drain(ctx); err != nil {
		return err
	}
	_, failures := c.pipe.latest()
	c.mu.Lock()
	c.spec = c.image.Clone()
	c.watchOwn, c.ownWrites = true, nil
	c.diverged.Store(false)
	c.mu.Unlock()
	c.specFailures = failures
	return nil
}

// dropSpeculation lets go of the speculative image on a node that no
// longer leads, where it is only memory.
func (c *Controller) dropSpeculation() {
	c.op.Lock()
	defer c.op.Unlock()
	if c.spec == nil {
		return
	}
	if _, ok := c.quorum.Leader(); !ok {
		c.spec = nil
		c.mu.Lock()
		c.watchOwn, c.ownWrites = false, nil
		c.mu.Unlock()
	}
}

// IsActive reports whether this node is the active controller.
func (c *Controller) IsActive() bool {
	c.op.Lock()
	q := c.quorum
	c.op.Unlock()
	if q == nil {
		return false
	}
	_, ok := q.Leader()
	return ok
}

// metadataVersion is the finalized metadata.version (0 before bootstrap).
func metadataVersion(im *metadata.Image) int16 { return im.Features[MetadataVersionFeature] }

// elrEnabled reports whether eligible leader replicas (KIP-966) are on.
func elrEnabled(im *metadata.Image) bool { return im.Features[ELRFeature] >= 1 }
