package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/kraftd/kraftd/security"
	kraftdtls "github.com/kraftd/kraftd/security/tls"
)

// Principal is who a connection or a forwarded request speaks for
// (security.Principal): the wire package's handlers name it often.
type Principal = security.Principal

// Anonymous is the principal of a connection that proved nothing.
var Anonymous = security.Anonymous

// maxHandshakeTimeout bounds a TLS handshake, so a client that connects
// and never finishes one holds a connection slot only this long (or
// connections.max.idle.ms, if shorter). Apache has no key for this; its
// idle timeout is ten minutes, far longer than any real handshake.
const maxHandshakeTimeout = 10 * time.Second

func (s *Server) handshakeTimeout() time.Duration {
	if s.handshakeLimit > 0 {
		return s.handshakeLimit
	}
	return min(maxHandshakeTimeout, s.idle())
}

// secure completes the TLS handshake of a connection to an SSL listener
// (package kraftdtls) and works out its principal; on a PLAINTEXT
// listener it returns c as it is, ANONYMOUS. Nothing of the Kafka
// protocol is read before it returns ok, and a failure closes only this
// connection, logged with the peer and the reason.
func (s *Server) secure(ctx context.Context, c net.Conn, listener string) (net.Conn, Principal, bool) {
	m := s.tls[listener]
	if m == nil {
		return c, Anonymous, true
	}
	tc, p, err := m.Accept(ctx, c, s.handshakeTimeout())
	var failed *kraftdtls.HandshakeError
	switch {
	case errors.As(err, &failed):
		if ctx.Err() == nil && s.logLimit.allow(logKindTLS) {
			s.log.Warn().Str("listener", listener).Str("remote", c.RemoteAddr().String()).
				Str("reason", failed.Reason).Msg("TLS handshake failed; closing connection")
		}
		return nil, Principal{}, false
	case err != nil:
		if s.logLimit.allow(logKindTLS) {
			s.log.Warn().Str("listener", listener).Str("remote", c.RemoteAddr().String()).Str("reason", err.Error()).
				Msg("no principal for the client's certificate; closing connection")
		}
		return nil, Principal{}, false
	}
	s.log.Debug().Str("listener", listener).Str("remote", c.RemoteAddr().String()).Str("principal", p.String()).
		Str("tls_version", tls.VersionName(tc.ConnectionState().Version)).Msg("TLS connection established")
	return tc, p, true
}
