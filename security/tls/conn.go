package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

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
// and works out its principal; on a PLAINTEXT listener it returns c as it
// is, ANONYMOUS. Nothing of the Kafka protocol is read before it returns
// ok, and a failure closes only this connection, logged with the peer
// and the reason.
func (s *Server) secure(ctx context.Context, c net.Conn, listener string) (net.Conn, Principal, bool) {
	m := s.tls[listener]
	if m == nil {
		return c, Anonymous, true
	}
	tc := tls.Server(c, m.serverConfig())
	timeout := s.handshakeTimeout()
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tc.SetDeadline(time.Now().Add(timeout))
	err := tc.HandshakeContext(hctx)
	tc.SetDeadline(time.Time{})
	if err != nil {
		if ctx.Err() == nil && s.logLimit.allow(logKindTLS) {
			s.log.Warn().Str("listener", listener).Str("remote", c.RemoteAddr().String()).
				Str("reason", describeHandshakeError(err, timeout)).Msg("TLS handshake failed; closing connection")
		}
		return nil, Principal{}, false
	}
	var peer *x509.Certificate
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		peer = certs[0]
	}
	p, err := principalFor(peer, m.settings.Principals)
	if err != nil {
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

// describeHandshakeError words a failed handshake for an operator.
func describeHandshakeError(err error, timeout time.Duration) string {
	var header tls.RecordHeaderError
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &header):
		return "the peer sent plaintext, not TLS, to a TLS listener or server (" + err.Error() + ")"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("the TLS handshake did not finish within %v", timeout)
	case errors.As(err, &unknownCA):
		return "the peer's certificate is not signed by a CA of the truststore (" + err.Error() + ")"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "the peer's certificate has expired or is not yet valid (" + err.Error() + ")"
	case errors.As(err, &hostname):
		return "the peer's certificate does not name the host connected to (" + err.Error() + ")"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the peer closed the connection during the TLS handshake"
	case strings.Contains(err.Error(), "remote error"):
		return "the peer refused the handshake, likely our certificate or TLS settings (" + err.Error() + ")"
	}
	return err.Error()
}

// dialTLS completes the client side of a handshake with a peer within
// the client's timeout.
func dialTLS(c net.Conn, cfg *tls.Config, timeout time.Duration) (net.Conn, error) {
	tc := tls.Client(c, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tc.SetDeadline(time.Now().Add(timeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, &handshakeError{describeHandshakeError(err, timeout), err}
	}
	tc.SetDeadline(time.Time{})
	return tc, nil
}

// handshakeError is a failed client handshake, worded for the log.
type handshakeError struct {
	reason string
	err    error
}

func (e *handshakeError) Error() string { return "TLS handshake: " + e.reason }
func (e *handshakeError) Unwrap() error { return e.err }
