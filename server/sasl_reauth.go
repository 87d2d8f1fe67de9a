package server

// sasl_reauth.go: re-authentication (KIP-368) on SASL listeners, with
// Apache's rules (SaslServerAuthenticator, KafkaChannel, SocketServer):
//
//   - With connections.max.reauth.ms (per mechanism:
//     listener.name.<l>.<mechanism>.connections.max.reauth.ms, then
//     listener.name.<l>.connections.max.reauth.ms, then the top-level key;
//     0, the default, turns it off) a completed authentication gets that
//     session lifetime, told to clients in SaslAuthenticate v1+'s
//     SessionLifetimeMs. kraftd's credentials (PLAIN users, SCRAM records)
//     do not expire, so the lifetime is the configured one.
//   - A SaslHandshake on an authenticated connection whose session has a
//     lifetime starts a re-authentication, unless the last one started less
//     than a second ago (then it is an ordinary request, answered with
//     ILLEGAL_SASL_STATE). It must keep the mechanism and the principal,
//     and grants a new lifetime from its end.
//   - Any other request that arrives after the session's end closes the
//     connection, so a client that does not re-authenticate in time (or
//     cannot: SaslAuthenticate v0, SaslHandshake v0) is disconnected, but
//     only when it next sends; an idle connection is left to
//     connections.max.idle.ms.
//
// Each re-authentication and each connection closed because its session
// ended is counted by outcome (Meter.Reauthentication; Apache counts them
// as successful-reauthentication, failed-reauthentication and
// expired-connections-killed-count).

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/security/sasl"
)

// minReauthInterval is Apache's least time between the starts of two
// re-authentications of one connection.
const minReauthInterval = time.Second

// checkSession applies the session's rules to frame, the next request read
// on an authenticated connection: a SaslHandshake that may re-authenticate
// does so here (handled true; ok false when it failed and the connection
// must close), and any other request after the session ended closes the
// connection (handled and not ok). Otherwise the caller serves frame.
func (s *Server) checkSession(ctx context.Context, c net.Conn, r *bufio.Reader, frame []byte, session *sasl.Session,
	listener string, settings *sasl.Settings, resp *responder, log zerolog.Logger) (handled, ok bool) {
	now := time.Now()
	isHandshake := len(frame) >= 2 && int16(binary.BigEndian.Uint16(frame)) == saslHandshakeKey
	if isHandshake && !session.Expires.IsZero() && now.Sub(session.ReauthStarted) >= minReauthInterval {
		session.ReauthStarted = now
		ok := s.reauthenticate(ctx, c, r, frame, session, settings, resp, log)
		if ok {
			s.countReauthentication(listener, ReauthSucceeded)
		} else {
			s.countReauthentication(listener, ReauthFailed)
		}
		return true, ok
	}
	if session.Expired(now) {
		s.countReauthentication(listener, ReauthExpired)
		s.decoding.release(len(frame))
		log.Info().Str("mechanism", session.Mechanism).Time("session_end", session.Expires).
			Msg("SASL session ended without re-authentication (connections.max.reauth.ms); closing connection")
		return true, false
	}
	return false, true
}

// saslHandshakeKey is SaslHandshake's API key.
const saslHandshakeKey = 17

// reauthenticate runs a re-authentication that handshake (a frame already
// read) starts. Its answers queue behind the responses still owed on the
// connection; the client sends nothing else until it completes. On
// success session takes the new lifetime.
func (s *Server) reauthenticate(ctx context.Context, c net.Conn, r *bufio.Reader, handshake []byte, session *sasl.Session,
	settings *sasl.Settings, resp *responder, log zerolog.Logger) bool {
	c.SetReadDeadline(time.Now().Add(s.handshakeTimeout()))
	a := s.newSASLConn(resp.send(ctx), settings, c.RemoteAddr(), session)
	next, ok := a.run(ctx, r, handshake, log)
	if !ok {
		a.delayReauthFailure(ctx)
		return false
	}
	session.Expires = next.Expires
	return true
}

// send is a saslConn's out on a connection with responses in flight: each
// frame queues as a finished response, written in request order.
func (r *responder) send(ctx context.Context) func([]byte) error {
	return func(frame []byte) error {
		p := &pending{}
		if !r.add(ctx, p) {
			return errors.New("the connection closed during re-authentication")
		}
		p.frame = frame
		r.finish(p)
		return nil
	}
}
