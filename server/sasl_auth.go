package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
)

// maxSASLFrame bounds a frame read before authentication completes, as
// Apache's sasl.server.max.receive.size default does: an unauthenticated
// client must not make the node buffer a large request.
const maxSASLFrame = 512 * 1024

// saslState is where a connection is in authenticating.
type saslState int

const (
	saslAwaitHandshake    saslState = iota // ApiVersions or SaslHandshake
	saslAwaitAuthenticate                  // SaslAuthenticate (handshake v1)
	saslAwaitRawToken                      // a bare token frame (handshake v0)
)

// authFailure is why authentication failed, worded for the log; the
// connection is closed after answer (if any) is sent.
type authFailure struct{ reason string }

func (f *authFailure) Error() string { return f.reason }

// authenticate runs the SASL exchange of a connection to a SASL listener,
// one request at a time, before anything else is read: only ApiVersions,
// SaslHandshake and SaslAuthenticate are served until it succeeds, as in
// Apache's SaslServerAuthenticator. It returns the User principal the
// mechanism proved, or ok false after logging why and answering what
// Apache answers; the caller then closes the connection.
func (s *Server) authenticate(ctx context.Context, c net.Conn, r *bufio.Reader, settings *SASLSettings, log zerolog.Logger) (Principal, bool) {
	// The whole exchange has the TLS handshake's bound, so a client that
	// connects and never authenticates does not hold a slot for long.
	c.SetDeadline(time.Now().Add(s.handshakeTimeout()))
	defer c.SetDeadline(time.Time{})
	a := &saslConn{s: s, c: c, settings: settings}
	for {
		frame, err := s.readSASLFrame(ctx, r)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn().Str("reason", describeSASLReadError(err)).Msg("SASL authentication did not complete; closing connection")
			}
			return Principal{}, false
		}
		done, err := a.serve(frame)
		s.decoding.release(len(frame))
		if err != nil {
			log.Warn().Str("mechanism", a.mechanism).Str("reason", err.Error()).Msg("SASL authentication failed; closing connection")
			s.delayClose(ctx)
			return Principal{}, false
		}
		if done {
			p := Principal{Type: "User", Name: a.exchange.user()}
			log.Debug().Str("mechanism", a.mechanism).Str("principal", p.String()).Msg("SASL authentication succeeded")
			return p, true
		}
	}
}

// delayClose holds a failed connection for
// connection.failed.authentication.delay.ms, as Apache does, so a client
// guessing passwords gets one guess per delay per connection slot.
func (s *Server) delayClose(ctx context.Context) {
	select {
	case <-time.After(time.Duration(s.cfg.FailedAuthDelayMs) * time.Millisecond):
	case <-ctx.Done():
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

// saslConn is one connection's authentication state.
type saslConn struct {
	s         *Server
	c         net.Conn
	settings  *SASLSettings
	state     saslState
	mechanism string
	exchange  saslExchange
}

// serve handles one frame; done reports a completed authentication.
func (a *saslConn) serve(frame []byte) (done bool, err error) {
	if a.state == saslAwaitRawToken {
		answer, done, err := a.exchange.step(frame)
		if err != nil {
			// A v0 client has no way to hear why: Apache just closes.
			return false, err
		}
		if _, err := a.c.Write(protocol.AppendFrame(nil, answer)); err != nil {
			return false, err
		}
		return done, nil
	}
	req, errResp, err := a.s.decode(frame)
	if err != nil {
		return false, fmt.Errorf("refused a request during authentication: %w", err)
	}
	if errResp != nil {
		_, err := a.c.Write(protocol.AppendResponse(nil, req.Header, errResp))
		return false, err
	}
	switch body := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		if a.state != saslAwaitHandshake {
			return false, &authFailure{"ApiVersions after SaslHandshake"}
		}
		resp, err := a.s.handleApiVersions(req)
		if err != nil {
			return false, err
		}
		return false, a.write(req.Header, resp)
	case *kmsg.SASLHandshakeRequest:
		if a.state != saslAwaitHandshake {
			return false, &authFailure{"a second SaslHandshake"}
		}
		return false, a.handshake(req.Header, body)
	case *kmsg.SASLAuthenticateRequest:
		if a.state != saslAwaitAuthenticate {
			return false, &authFailure{"SaslAuthenticate before SaslHandshake"}
		}
		return a.authenticateStep(req.Header, body)
	}
	return false, &authFailure{fmt.Sprintf("%s before SASL authentication completed", kmsg.NameForKey(req.Header.Key))}
}

func (a *saslConn) handshake(h protocol.RequestHeader, req *kmsg.SASLHandshakeRequest) error {
	resp, ok := saslHandshake(req, a.settings.Mechanisms)
	if err := a.write(h, resp); err != nil {
		return err
	}
	if !ok {
		return &authFailure{fmt.Sprintf("the client asked for mechanism %q; this listener enables %v", req.Mechanism, a.settings.Mechanisms)}
	}
	ex, err := a.s.newSASLExchange(req.Mechanism, a.settings)
	if err != nil {
		return err
	}
	a.mechanism, a.exchange = req.Mechanism, ex
	a.state = saslAwaitAuthenticate
	if h.Version == 0 {
		a.state = saslAwaitRawToken
	}
	return nil
}

func (a *saslConn) authenticateStep(h protocol.RequestHeader, req *kmsg.SASLAuthenticateRequest) (bool, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	answer, done, err := a.exchange.step(req.SASLAuthBytes)
	if err != nil {
		// Apache's answer says only that the credentials were wrong; the
		// log line has the reason.
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + a.mechanism
		resp.ErrorMessage = &msg
		if werr := a.write(h, resp); werr != nil {
			return false, werr
		}
		return false, err
	}
	resp.SASLAuthBytes = answer
	return done, a.write(h, resp)
}

func (a *saslConn) write(h protocol.RequestHeader, resp kmsg.Response) error {
	resp.SetVersion(h.Version)
	_, err := a.c.Write(protocol.AppendResponse(nil, h, resp))
	return err
}
