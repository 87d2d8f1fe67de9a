package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

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
	// KRaftVersion is the quorum's kraft.version, which brokers must
	// support, until the first SetQuorum says otherwise.
	KRaftVersion int16
	// AutoLeaderRebalance is auto.leader.rebalance.enable; Tick then moves
	// leadership back to preferred replicas every LeaderImbalanceCheck
	// (leader.imbalance.check.interval.seconds).
	AutoLeaderRebalance  bool
	LeaderImbalanceCheck time.Duration
	// Rand drives replica placement; nil starts every topic at the first broker.
	Rand *rand.Rand
	// TopicIDs is where new topic ids come from: crypto/rand in
	// production, a seeded source in the simulator. NewCore requires it.
	TopicIDs io.Reader
	// Incarnation and Listeners describe this controller for its own
	// ControllerRegistration.
	Incarnation [16]byte
	Listeners   []Listener
	// Report, if set, hears how the timed work Tick starts ends ("fence",
	// "balance", "register", with the brokers fenced or partitions moved).
	// It is called from the core's loop and must not block.
	Report func(work string, count int, err error)
	// Tokens are the delegation.token.* settings.
	Tokens TokenSettings
}

func (s Settings) withDefaults() Settings {
	if s.SessionTimeout <= 0 {
		s.SessionTimeout = 9 * time.Second
	}
	if s.DefaultPartitions <= 0 {
		s.DefaultPartitions = 1
	}
	if s.DefaultReplicationFactor <= 0 {
		s.DefaultReplicationFactor = 1
	}
	if s.LeaderImbalanceCheck <= 0 {
		s.LeaderImbalanceCheck = 300 * time.Second
	}
	s.Tokens = s.Tokens.withDefaults()
	return s
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

// selfRegistration is the ControllerRegistration this controller sends for
// itself: its listeners and the feature ranges it supports.
func selfRegistration(s *Settings) *kmsg.ControllerRegistrationRequest {
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

// ready checks that this node is the active controller and that the
// speculative image is usable, or reports that the operation at the head
// of the queue must wait. The first time in a leader epoch it proposes a
// NoOp barrier and waits until it commits: a record of the new epoch
// committing proves the committed image holds everything committed before
// the epoch began. It then starts the epoch's broker sessions afresh, as
// Apache does on activation: every registered broker gets a full session
// from now. After a failed write, or a record in the log that is not the
// core's own, it rebuilds the speculative image from the committed one
// once no write is pending.
func (c *Core) ready() (wait bool, err error) {
	epoch := c.quorum.Epoch
	if !c.quorum.Leader {
		c.dropSpec()
		return false, ErrNotController
	}
	if c.readyEpoch == epoch {
		if c.pipe.failures != c.specFailures || c.ctl.foreignWrites(c.pipe.empty()) {
			c.spec = nil
		}
		if c.spec == nil {
			if !c.pipe.empty() {
				return true, nil
			}
			c.rebuildSpec()
		}
		return false, nil
	}
	c.spec = nil
	// On a log that has never held a metadata.version the node first writes
	// the bootstrap records (ActivationRecords). Nothing may precede them:
	// an Apache follower that commits a record before any metadata.version
	// stops with a fatal fault. So until they have committed, this node is
	// not yet an active controller; callers retry.
	if !c.ctl.bootstrapped() {
		return false, ErrNotController
	}
	if b := c.barrier; b != nil {
		if !b.answered {
			return true, nil
		}
		c.barrier = nil
		if b.err != nil {
			return false, b.err
		}
		if c.barrierEpoch == epoch {
			c.startEpoch(epoch)
			return false, nil
		}
	}
	// Writes of an earlier leadership settle first (the loss of it fails
	// them), so that none is pending once the barrier has committed.
	if !c.pipe.empty() {
		return true, nil
	}
	w := c.pipe.add(1)
	c.barrier, c.barrierEpoch = w, epoch
	done := func(first int64, err error) { c.done(w, first, err); c.drive() }
	if err := c.log.Propose(epoch, []metadata.Record{&metadata.NoOpRecord{}}, nil, done); err != nil {
		c.barrier = nil
		c.done(w, -1, err)
		return false, err
	}
	return true, nil
}

// startEpoch makes this core the active controller of epoch, its barrier
// committed.
func (c *Core) startEpoch(epoch int32) {
	c.sessions = newSessions(c.settings.SessionTimeout)
	c.ctl.eachBroker(func(id int32, b *metadata.RegisterBrokerRecord) {
		c.sessions.register(id, b.BrokerEpoch, b.Fenced, c.now)
	})
	c.readyEpoch = epoch
	c.rebuildSpec()
}

// rebuildSpec makes the speculative image a copy of the committed one;
// no write is pending.
func (c *Core) rebuildSpec() {
	c.spec = c.ctl.speculate()
	c.specFailures = c.pipe.failures
}

// dropSpec lets go of the speculative image on a node that no longer
// leads, where it is only memory.
func (c *Core) dropSpec() {
	if c.spec != nil {
		c.spec = nil
	}
	c.ctl.stopSpeculating()
}

// metadataVersion is the finalized metadata.version (0 before bootstrap).
func metadataVersion(im *metadata.Image) int16 { return im.Features[MetadataVersionFeature] }

// elrEnabled reports whether eligible leader replicas (KIP-966) are on.
func elrEnabled(im *metadata.Image) bool { return im.Features[ELRFeature] >= 1 }
