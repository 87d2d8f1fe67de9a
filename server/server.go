package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/protocol"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/security/sasl"
	kraftdtls "github.com/kraftd/kraftd/security/tls"
)

// handlerFunc answers one request. A returned error means "close the
// connection"; protocol-level failures are error codes inside the response.
type handlerFunc func(s *Server, r *Request) (kmsg.Response, error)

// startFunc begins answering one request on the connection's own
// goroutine. It returns the response when it has one at once; else the
// rest of the work, which runs on a goroutine of its own, as a handlerFunc
// does. It must not wait for anything but a lock held briefly (the
// controller's): the connection reads nothing meanwhile.
type startFunc func(s *Server, r *Request) (kmsg.Response, handlerFunc)

type handlerDef struct {
	min, max int16
	fn       handlerFunc
	start    startFunc  // nil: fn runs on a goroutine of its own
	access   accessRule // what the authorizer checks before fn or start
}

// handlers is filled by the init function of each NN_api_name.go file.
var handlers = map[int16]handlerDef{}

// regKey registers the handler of one API key with the version range it
// serves and its access rule, so that no key is served without one.
// ApiVersions is derived from these ranges.
func regKey(key, min, max int16, fn handlerFunc, access accessRule) {
	if _, dup := handlers[key]; dup {
		panic(fmt.Sprintf("server: key %d registered twice", key))
	}
	handlers[key] = handlerDef{min, max, fn, nil, access}
}

// regStart lets the connection's goroutine start key's requests itself
// (startFunc), saving the hand-off to another goroutine and back for those
// answered at once. fn, registered before, still serves the key where a
// request arrives otherwise (in an Envelope).
func regStart(key int16, start startFunc) {
	def, ok := handlers[key]
	if !ok || def.start != nil {
		panic(fmt.Sprintf("server: start of key %d registered twice or before its handler", key))
	}
	def.start = start
	handlers[key] = def
}

// Server accepts connections on the configured listeners and dispatches
// their requests.
type Server struct {
	cfg      *Config
	log      zerolog.Logger
	registry *protocol.Registry
	backend  Backend

	conns *connLimits
	// decoding is the node's one memory budget (queued.max.request.bytes):
	// frames being read and decoded, requests being handled, answers
	// waiting to be written.
	decoding *memBudget
	// tls holds the material of each SSL listener, by name.
	tls            map[string]*kraftdtls.Material
	handshakeLimit time.Duration // tests shorten the handshake bound
	meter          Meter         // nil: nothing is measured
	// authorizer checks every request when authorizer.class.name is
	// set; nil serves everyone. denials rate-limits its refusal logs.
	authorizer *authz.Authorizer
	denials    deniedLog
	// logLimit rate-limits the security log lines strangers can cause
	// (log_limit.go); failures bounds failed logins (sasl.FailureLimits).
	logLimit *logLimiter
	failures *sasl.FailureLimits

	mu        sync.Mutex
	listeners []net.Listener
	addrs     map[string]net.Addr
	wg        sync.WaitGroup
	cancel    context.CancelFunc
	ctx       context.Context
}

// Backend is what handlers ask for cluster state; the node (quorum plus
// controller) implements it. Handlers reach the node only through it.
type Backend interface {
	// Raft hands a KRaft RPC to the quorum and waits for its answer.
	Raft(ctx context.Context, from *Request) (kmsg.Response, error)
	// ClusterID is the cluster id from meta.properties.
	ClusterID() string
	// Features returns the finalized feature levels and their epoch.
	Features() (levels map[string]int16, epoch int64)
	// ActiveController returns the raft leader's id, or -1 when unknown.
	ActiveController() int32
	// Controllers lists the registered controllers (or, before any has
	// registered, the voters) with their endpoints on listener.
	Controllers(listener string) []kmsg.DescribeClusterResponseBroker
	// Controller is the controller the handlers of its APIs call, and whose
	// committed ACLs the authorizer reads; nil when the node has none
	// (tests of the server alone), and those APIs answer NOT_CONTROLLER.
	Controller() *controller.Controller
	// Status is the quorum's state: its leader, role and voters.
	Status() quorum.Status
	// CaughtUp is closed once the node has first replayed its log to the
	// high watermark: the authorizer decides nothing before, as an ACL
	// that denies may not be replayed yet. Nil when there is nothing to
	// wait for.
	CaughtUp() <-chan struct{}
	// ScramCredentialSource gives SCRAM logins the credentials of the
	// committed image.
	sasl.ScramCredentialSource
}

// New builds a server for cfg.
func New(cfg *Config, backend Backend, log zerolog.Logger) *Server {
	s := &Server{cfg: cfg, log: log, registry: protocol.NewRegistry(), backend: backend, addrs: map[string]net.Addr{},
		conns: newConnLimits(cfg.MaxConnections, cfg.MaxConnectionsPerIP), decoding: newMemBudget(cfg.QueuedMaxRequestBytes)}
	for key, h := range handlers {
		s.registry.Register(key, h.min, h.max)
	}
	s.authorizer = s.newAuthorizer()
	s.logLimit = newLogLimiter(log, logBurst, logWindow)
	if cfg.MaxFailedAuthPerAddress > 0 || cfg.MaxFailedAuthPerPrincipal > 0 {
		s.failures = sasl.NewFailureLimits(cfg.MaxFailedAuthPerAddress, cfg.MaxFailedAuthPerPrincipal)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Registry is the set of served API versions.
func (s *Server) Registry() *protocol.Registry { return s.registry }

// Listen binds every configured listener. It returns once all are bound.
func (s *Server) Listen() error {
	s.tls = map[string]*kraftdtls.Material{}
	for _, l := range s.cfg.Listeners {
		m, isTLS, err := s.cfg.listenerTLS(l.Name)
		if err != nil {
			return err
		}
		if isTLS {
			s.tls[l.Name] = m
		}
	}
	for _, l := range s.cfg.Listeners {
		ln, err := net.Listen("tcp", net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
		if err != nil {
			s.Close()
			return fmt.Errorf("listener %s: %w", l, err)
		}
		s.serve(ln, l.Name)
	}
	return nil
}

// serve accepts connections on ln, which Close will close.
func (s *Server) serve(ln net.Listener, name string) {
	s.mu.Lock()
	s.listeners = append(s.listeners, ln)
	s.addrs[name] = ln.Addr()
	s.mu.Unlock()
	s.log.Info().Str("listener", name).Str("addr", ln.Addr().String()).Str("security_protocol", s.protocol(name)).Msg("listening")
	s.wg.Add(1)
	go s.accept(ln, name)
}

func (s *Server) protocol(listener string) string {
	return s.cfg.ListenerProtocols[listener]
}

// Addr returns the bound address of the named listener (useful with port 0).
func (s *Server) Addr(listener string) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[listener]
}

// Accept backs off from this after a failure, doubling up to
// maxAcceptBackoff, as Go's net/http server does.
const (
	minAcceptBackoff = 5 * time.Millisecond
	maxAcceptBackoff = time.Second
)

// accept runs until the listener is closed. Every other accept error (out
// of file descriptors, a connection aborted before it was taken) is
// temporary: the loop waits and tries again, so the listener recovers once
// descriptors are free.
func (s *Server) accept(ln net.Listener, name string) {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, minAcceptBackoff), maxAcceptBackoff)
			s.log.Warn().Err(err).Str("listener", name).Dur("retry_in_ms", backoff).Msg("accept failed")
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		release, refused := s.conns.open(c.RemoteAddr())
		if refused != "" {
			// As Apache does: the connection is closed at once, and the
			// client retries later.
			if s.logLimit.allow(logKindRefused) {
				s.log.Warn().Str("listener", name).Str("remote", c.RemoteAddr().String()).Str("reason", refused).Msg("refused connection")
			}
			s.countConnection(name, ConnRefused)
			c.Close()
			continue
		}
		// The slot is freed when the connection closes, which a failed
		// login's delay puts after its goroutine ends (holdFailure).
		c = &countedConn{Conn: c, release: release}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			stop := context.AfterFunc(s.ctx, func() { c.Close() })
			defer stop()
			conn, principal, ok := s.secure(s.ctx, c, name)
			if !ok {
				s.countConnection(name, ConnTLSFailed)
				c.Close()
				return
			}
			s.serveConn(s.ctx, conn, name, principal)
		}()
	}
}

// Close stops the listeners and every connection, and waits for them.
func (s *Server) Close() {
	s.cancel()
	s.mu.Lock()
	for _, ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.logLimit.close()
}

// countedConn is an accepted connection counted by max.connections until
// its first Close.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// opContext bounds a controller operation by the request's own timeout when
// it has one, else by a default, and by the connection's life.
func opContext(r *Request, timeoutMs int32) (context.Context, context.CancelFunc) {
	d := 30 * time.Second
	if timeoutMs > 0 {
		d = time.Duration(timeoutMs) * time.Millisecond
	}
	return context.WithTimeout(r.Ctx, d)
}

// errNoController answers requests when the node has no controller.
var errNoController = controller.ErrNotController

// stepQuorum hands a KRaft RPC to the consensus core and waits for the
// core's answer, so a parked request only holds up its own connection.
func (s *Server) stepQuorum(r *Request) (kmsg.Response, error) {
	return s.backend.Raft(r.Ctx, r)
}
