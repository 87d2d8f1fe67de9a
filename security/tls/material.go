package kraftdtls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// Material is one SSL listener's keystore and truststore, as both its
// server side and the peer client use them. Each new connection asks for
// the current material; when a store file was replaced (renamed over, or
// its modification time or size changed) since it was read, it is read again first, so a replaced
// certificate is served without a restart (Apache needed a fix for an
// expired certificate still presented after failover, KAFKA-20025). A
// replacement that does not load, or names another subject than the
// certificate it replaces (unless ssl.allow.dn.changes / .san.changes
// allow it), is logged and the old material kept.
type Material struct {
	settings *Settings
	log      zerolog.Logger

	mu         sync.Mutex
	cert       *tls.Certificate
	roots      *x509.CertPool // nil: the system's roots
	keyStamp   fileStamp
	trustStamp fileStamp
	failed     string // the last reload error logged, not to log it per connection
}

// fileStamp tells whether a file was replaced: a rename puts another file
// (os.SameFile) at the path, an in-place write changes time or size.
type fileStamp struct{ info os.FileInfo }

func stampOf(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{fi}
}

func (a fileStamp) same(b fileStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == b.info
	}
	return os.SameFile(a.info, b.info) && a.info.ModTime().Equal(b.info.ModTime()) && a.info.Size() == b.info.Size()
}

// NewMaterial loads the stores once; an error is a *security.KeyError.
func NewMaterial(t *Settings, log zerolog.Logger) (*Material, error) {
	m := &Material{settings: t, log: log.With().Str("listener", t.Listener).Logger()}
	m.keyStamp, m.trustStamp = stampOf(t.Keystore.Location), stampOf(t.Truststore.Location)
	cert, err := loadKeystore(t)
	if err != nil {
		return nil, err
	}
	roots, err := loadTruststore(t)
	if err != nil {
		return nil, err
	}
	m.cert, m.roots = cert, roots
	m.logServing("serving certificate")
	return m, nil
}

func (m *Material) logServing(msg string) {
	c := m.cert.Leaf
	m.log.Info().Str("subject", c.Subject.String()).Str("serial", c.SerialNumber.Text(16)).
		Time("not_after", c.NotAfter).Str("issuer", c.Issuer.String()).Msg(msg)
}

// current returns the certificate and roots to use for a new connection,
// reading replaced store files first.
func (m *Material) current() (*tls.Certificate, *x509.CertPool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.settings
	if ks := stampOf(t.Keystore.Location); !ks.same(m.keyStamp) {
		if err := m.reloadKeystore(); err != nil {
			m.logFailure("keystore", err)
		} else {
			m.keyStamp = ks
		}
	}
	if ts := stampOf(t.Truststore.Location); !ts.same(m.trustStamp) {
		roots, err := loadTruststore(t)
		if err != nil {
			m.logFailure("truststore", err)
		} else {
			m.roots, m.trustStamp, m.failed = roots, ts, ""
			m.log.Info().Str("truststore", t.Truststore.Location).Msg("truststore replaced on disk; new connections trust it")
		}
	}
	return m.cert, m.roots
}

func (m *Material) reloadKeystore() error {
	cert, err := loadKeystore(m.settings)
	if err != nil {
		return err
	}
	old := m.cert.Leaf
	if !m.settings.AllowDNChanges && (old.Subject.String() != cert.Leaf.Subject.String() || old.Issuer.String() != cert.Leaf.Issuer.String()) {
		return fmt.Errorf("the new certificate's subject or issuer (%s, by %s) differs from the served one's; set ssl.allow.dn.changes=true to allow it", cert.Leaf.Subject, cert.Leaf.Issuer)
	}
	if !m.settings.AllowSANChanges && !sameSANs(old, cert.Leaf) {
		return errors.New("the new certificate's subject alternative names differ from the served one's; set ssl.allow.san.changes=true to allow it")
	}
	m.cert, m.failed = cert, ""
	m.logServing("keystore replaced on disk; now serving certificate")
	return nil
}

func (m *Material) logFailure(store string, err error) {
	if msg := err.Error(); msg != m.failed {
		m.failed = msg
		m.log.Error().Err(err).Str("store", store).Msg("replaced store not taken; still serving the previous one")
	}
}

func sameSANs(a, b *x509.Certificate) bool {
	ips := func(c *x509.Certificate) []string {
		var out []string
		for _, ip := range c.IPAddresses {
			out = append(out, ip.String())
		}
		return out
	}
	return slices.Equal(a.DNSNames, b.DNSNames) && slices.Equal(ips(a), ips(b)) &&
		slices.Equal(a.EmailAddresses, b.EmailAddresses) && len(a.URIs) == len(b.URIs)
}

// serverConfig is the listener's TLS configuration; every handshake takes
// the material current at that moment.
func (m *Material) serverConfig() *tls.Config {
	t := m.settings
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, roots := m.current()
			return &tls.Config{
				Certificates: []tls.Certificate{*cert}, ClientCAs: roots, ClientAuth: t.ClientAuth,
				MinVersion: t.MinVersion, MaxVersion: t.MaxVersion, CipherSuites: t.CipherSuites,
			}, nil
		},
	}
}

// ClientConfig is the peer client's TLS configuration for a connection to
// addr: it presents the keystore's certificate and, with
// ssl.endpoint.identification.algorithm=https (the default), checks that
// the peer's certificate names addr's host.
func (m *Material) ClientConfig(addr string) *tls.Config {
	t := m.settings
	cert, roots := m.current()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	c := &tls.Config{
		Certificates: []tls.Certificate{*cert}, RootCAs: roots, ServerName: strings.Trim(host, "[]"),
		MinVersion: t.MinVersion, MaxVersion: t.MaxVersion, CipherSuites: t.CipherSuites,
	}
	if !t.VerifyHostname {
		verifyChainOnly(c)
	}
	return c
}

// verifyChainOnly has c verify the peer's chain against its RootCAs, not
// the name: crypto/tls does both or neither.
func verifyChainOnly(c *tls.Config) {
	roots := c.RootCAs
	c.InsecureSkipVerify = true
	c.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, roots) }
}

func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return fmt.Errorf("tls: failed to verify certificate: %w", err)
	}
	return nil
}
