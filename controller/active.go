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
	// Propose writes records and waits until they are committed and
	// replayed into the image. stamp, if not nil, is called with the offset
	// the first record will get, before the records are encoded, so a
	// record may carry its own offset (a broker epoch is the offset of its
	// registration). It returns ErrNotController when this node is not, or
	// stops being, the leader.
	Propose(ctx context.Context, records []metadata.Record, stamp func(firstOffset int64)) (int64, error)
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

// exec runs one controller operation. Operations run one at a time, so each
// one validates against an image holding the effects of every earlier one:
// Propose returns only once the records are committed and replayed. build
// sees the image under the read lock and must not keep references into it;
// it returns the records to write (none for a read or a rejected request).
func (c *Controller) exec(ctx context.Context, build func(im *metadata.Image) ([]metadata.Record, func(int64), error)) (int64, error) {
	c.op.Lock()
	defer c.op.Unlock()
	if err := c.ready(ctx); err != nil {
		return -1, err
	}
	c.mu.RLock()
	records, stamp, err := build(c.image)
	c.mu.RUnlock()
	if err != nil || len(records) == 0 {
		return -1, err
	}
	return c.quorum.Propose(ctx, records, stamp)
}

// ready checks that this node is the active controller and, the first time
// in a leader epoch, waits until the image holds every record committed
// before the epoch began: a record of the new epoch committing proves that.
// It also starts the epoch's broker sessions afresh, as Apache does on
// activation: every registered broker gets a full session from now.
// Called with c.op held.
func (c *Controller) ready(ctx context.Context) error {
	if c.quorum == nil {
		return ErrNotController
	}
	epoch, ok := c.quorum.Leader()
	if !ok {
		return ErrNotController
	}
	if c.readyEpoch == epoch {
		return nil
	}
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
	if _, err := c.quorum.Propose(ctx, []metadata.Record{&metadata.NoOpRecord{}}, nil); err != nil {
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
	return nil
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
