package kraftdtls

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

	"github.com/kraftd/kraftd/security"
)

// Accept completes the server side of a handshake on c within timeout and
// names the client: ANONYMOUS when it sent no certificate, else its
// certificate's DN mapped by ssl.principal.mapping.rules. A failed
// handshake is a *HandshakeError; a certificate no rule maps is another
// error. Nothing is read from c after the handshake.
func (m *Material) Accept(ctx context.Context, c net.Conn, timeout time.Duration) (*tls.Conn, security.Principal, error) {
	tc := tls.Server(c, m.serverConfig())
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tc.SetDeadline(time.Now().Add(timeout))
	err := tc.HandshakeContext(hctx)
	tc.SetDeadline(time.Time{})
	if err != nil {
		return nil, security.Principal{}, &HandshakeError{describeHandshakeError(err, timeout), err}
	}
	var peer *x509.Certificate
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		peer = certs[0]
	}
	p, err := security.PrincipalFor(peer, m.settings.Principals)
	if err != nil {
		return nil, security.Principal{}, err
	}
	return tc, p, nil
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

// Dial completes the client side of a handshake on c within timeout. A
// failure is a *HandshakeError, worded for the log.
func Dial(c net.Conn, cfg *tls.Config, timeout time.Duration) (net.Conn, error) {
	tc := tls.Client(c, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tc.SetDeadline(time.Now().Add(timeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, &HandshakeError{describeHandshakeError(err, timeout), err}
	}
	tc.SetDeadline(time.Time{})
	return tc, nil
}

// HandshakeError is a failed handshake, worded for the log.
type HandshakeError struct {
	Reason string // what failed, worded for an operator
	err    error
}

func (e *HandshakeError) Error() string { return "TLS handshake: " + e.Reason }
func (e *HandshakeError) Unwrap() error { return e.err }
