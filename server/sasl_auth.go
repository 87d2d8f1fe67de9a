package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
	"github.com/kraftd/kraftd/security/sasl"
)

// maxSASLFrame bounds a frame read before authentication completes, as
// Apache's sasl.server.max.receive.size default does: an unauthenticated
// client must not make the node buffer a large request.
const maxSASLFrame = 512 * 1024

// authenticate runs the SASL exchange of a connection to a SASL listener,
// one request at a time, before anything else is read: only ApiVersions,
// SaslHandshake and SaslAuthenticate are served until it succeeds, as in
// Apache's SaslServerAuthenticator (sasl.Conversation decides what each
// request may do and answers). It returns the session the mechanism
// proved, or ok false after logging why; then the answer Apache gives a
// failure is held for connection.failed.authentication.delay.ms and c is
// closed after it (holdFailure), so the caller must not use c again.
func (s *Server) authenticate(ctx context.Context, c net.Conn, r *bufio.Reader, settings *sasl.Settings, log zerolog.Logger) (*sasl.Session, bool) {
	// The whole exchange has the TLS handshake's bound, so a client that
	// connects and never authenticates does not hold a slot for long.
	c.SetDeadline(time.Now().Add(s.handshakeTimeout()))
	defer c.SetDeadline(time.Time{})
	a := s.newSASLConn(writeTo(c), settings, c.RemoteAddr(), nil)
	session, ok := a.run(ctx, r, nil, log)
	if !ok {
		s.holdFailure(c, a.held)
	}
	return session, ok
}

// run serves frames until the exchange completes or fails; first, when
// set, is a frame already read (the SaslHandshake that starts a
// re-authentication). On a failure the answer owed, if any, is left in
// a.held for the caller to send after the delay.
func (a *saslConn) run(ctx context.Context, r *bufio.Reader, first []byte, log zerolog.Logger) (*sasl.Session, bool) {
	s := a.s
	for {
		frame, err := first, error(nil)
		if first == nil {
			frame, err = s.readSASLFrame(ctx, r)
		}
		first = nil
		if err != nil {
			if ctx.Err() == nil && s.logLimit.allow(logKindSASL) {
				log.Warn().Str("reason", describeSASLReadError(err)).Msgf("SASL %s did not complete; closing connection", a.conv.What())
			}
			return nil, false
		}
		done, err := a.serve(frame)
		s.decoding.release(len(frame))
		if err != nil {
			kind := logKindSASL
			var limited *sasl.LimitError
			if errors.As(err, &limited) {
				kind = logKindSASLLimit
			}
			if s.logLimit.allow(kind) {
				log.Warn().Str("mechanism", a.conv.Mechanism()).Str("reason", err.Error()).Msgf("SASL %s failed; closing connection", a.conv.What())
			}
			return nil, false
		}
		if done {
			session := a.conv.Session(time.Now())
			log.Debug().Str("mechanism", session.Mechanism).Str("principal", session.Principal.String()).
				Int64("session_lifetime_ms", a.conv.Lifetime().Milliseconds()).Msgf("SASL %s succeeded", a.conv.What())
			return session, true
		}
	}
}

// writeTo writes frames straight to c: while a connection first
// authenticates, nothing else is in flight on it.
func writeTo(c net.Conn) func([]byte) error {
	return func(frame []byte) error {
		_, err := c.Write(frame)
		return err
	}
}

// failedAuthDelay is connection.failed.authentication.delay.ms.
func (s *Server) failedAuthDelay() time.Duration {
	return time.Duration(s.cfg.FailedAuthDelayMs) * time.Millisecond
}

// holdFailure sends answer (nil: none) to a connection that failed its
// first authentication once connection.failed.authentication.delay.ms has
// passed, and then closes it, as Apache's Selector does: the client
// learns of the failure no sooner, so each connection slot guesses once
// per delay. A timer does it rather than the connection's goroutine,
// which returns at once, so a held connection costs its socket (still
// counted by max.connections until closed) and a timer. A stopping server
// closes held connections at once, unanswered.
func (s *Server) holdFailure(c net.Conn, answer []byte) {
	send := func() {
		if answer != nil {
			c.SetWriteDeadline(time.Now().Add(s.handshakeTimeout()))
			c.Write(answer)
		}
		c.Close()
	}
	delay := s.failedAuthDelay()
	if delay <= 0 {
		send()
		return
	}
	s.wg.Add(1)
	var once sync.Once
	finish := func(answered bool) {
		once.Do(func() {
			if answered {
				send()
			} else {
				c.Close()
			}
			s.wg.Done()
		})
	}
	// The timer and the server's stop race: the first to come finishes.
	// The timer drops the stop's registration, which would otherwise hold
	// the connection until the server stops.
	var mu sync.Mutex
	var unregister func() bool
	mu.Lock()
	defer mu.Unlock()
	t := time.AfterFunc(delay, func() {
		mu.Lock()
		unregister()
		mu.Unlock()
		finish(true)
	})
	unregister = context.AfterFunc(s.ctx, func() {
		if t.Stop() {
			finish(false)
		}
	})
}

// delayReauthFailure holds a failed re-authentication's answer for the
// delay on the connection's own goroutine, which has nothing else to read
// meanwhile, then queues it behind the responses still owed.
func (a *saslConn) delayReauthFailure(ctx context.Context) {
	select {
	case <-time.After(a.s.failedAuthDelay()):
	case <-ctx.Done():
		return
	}
	if a.held != nil {
		a.out(a.held)
	}
}

func (s *Server) readSASLFrame(ctx context.Context, r *bufio.Reader) ([]byte, error) {
	n, err := protocol.ReadFrameSize(r, min(s.cfg.MaxFrameSize, maxSASLFrame))
	if err != nil {
		return nil, err
	}
	return s.readFrameBody(ctx, r, n)
}

func describeSASLReadError(err error) string {
	var size *protocol.FrameSizeError
	switch {
	case errors.As(err, &size):
		return fmt.Sprintf("a frame before authentication is larger than %d bytes, or not Kafka (%v)", maxSASLFrame, err)
	case isTimeout(err):
		return "the client did not finish authenticating in time"
	}
	return "the connection ended during authentication: " + err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// saslConn is one connection's authentication (or re-authentication) on
// the wire: sasl.Conversation's rules over frames read from and written to
// the connection.
type saslConn struct {
	s *Server
	// out writes one whole frame to the client, in order after anything
	// answered before.
	out  func(frame []byte) error
	conv *sasl.Conversation
	// held is the answer to a failed exchange, sent only after the delay.
	held []byte
}

// newSASLConn starts the authentication of a connection from remote, or
// the re-authentication of prev, within the node's bounds on failures.
func (s *Server) newSASLConn(out func([]byte) error, settings *sasl.Settings, remote net.Addr, prev *sasl.Session) *saslConn {
	return &saslConn{s: s, out: out, conv: sasl.NewConversation(settings, s.failures, sasl.AddressKey(remote), prev)}
}

// serve handles one frame; done reports a completed authentication.
func (a *saslConn) serve(frame []byte) (done bool, err error) {
	if a.conv.AwaitsRawToken() {
		answer, done, err := a.conv.RawToken(frame)
		if err != nil {
			return false, err
		}
		return done, a.out(protocol.AppendFrame(nil, answer))
	}
	req, errResp, err := a.s.decode(frame)
	if err != nil {
		return false, fmt.Errorf("refused a request during authentication: %w", err)
	}
	if errResp != nil {
		return false, a.out(protocol.AppendResponse(nil, req.Header, errResp))
	}
	if err := a.conv.Admit(req.Header.Key); err != nil {
		return false, err
	}
	switch body := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		resp, err := a.s.handleApiVersions(req)
		if err != nil {
			return false, err
		}
		return false, a.write(req.Header, resp)
	case *kmsg.SASLHandshakeRequest:
		return false, a.handshake(req.Header, body)
	case *kmsg.SASLAuthenticateRequest:
		return a.authenticateStep(req.Header, body)
	}
	return false, fmt.Errorf("%s is not served during authentication", kmsg.NameForKey(req.Header.Key)) // Admit lets none through
}

func (a *saslConn) handshake(h protocol.RequestHeader, req *kmsg.SASLHandshakeRequest) error {
	resp, ok := saslHandshake(req, a.conv.Enabled())
	if !ok {
		a.hold(h, resp)
		return fmt.Errorf("the client asked for mechanism %q; this listener enables %v", req.Mechanism, a.conv.Enabled())
	}
	if err := a.write(h, resp); err != nil {
		return err
	}
	return a.conv.Start(req.Mechanism, h.Version, a.s.backend)
}

func (a *saslConn) authenticateStep(h protocol.RequestHeader, req *kmsg.SASLAuthenticateRequest) (bool, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	answer, done, msg, err := a.conv.Authenticate(req.SASLAuthBytes)
	if err != nil {
		// Held: SASL_AUTHENTICATION_FAILED with the message Apache gives.
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		a.hold(h, resp)
		return false, err
	}
	if done {
		// v0 has no field for it; such a client is still closed once the
		// session ends, as KIP-368 has Apache do.
		resp.SessionLifetimeMillis = a.conv.Lifetime().Milliseconds()
	}
	resp.SASLAuthBytes = answer
	return done, a.write(h, resp)
}

// hold keeps a failure's answer to be sent after the delay.
func (a *saslConn) hold(h protocol.RequestHeader, resp kmsg.Response) {
	resp.SetVersion(h.Version)
	a.held = protocol.AppendResponse(nil, h, resp)
}

func (a *saslConn) write(h protocol.RequestHeader, resp kmsg.Response) error {
	resp.SetVersion(h.Version)
	return a.out(protocol.AppendResponse(nil, h, resp))
}
