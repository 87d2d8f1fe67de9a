package kit

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kraftd/kraftd/internal/testpki"
)

// The files of a TLS cluster, in Dir's tls directory: the CA certificate
// clients trust, and the one key and certificate chain every node serves
// (PEM, which kraftd and Apache both read).
const (
	tlsDirName   = "tls"
	caFileName   = "ca.pem"
	keystoreName = "node.keystore.pem"
	// certLifetime is long enough for a Dir kept across many runs.
	certLifetime = 10 * 365 * 24 * time.Hour
)

// CAFile is the PEM certificate of the cluster's CA, "" without TLS.
func (c *Cluster) CAFile() string {
	if !c.spec.TLS {
		return ""
	}
	return filepath.Join(c.dir, tlsDirName, caFileName)
}

// TLSConfig is what a Go client dials the cluster with: the cluster's CA
// as the only root. nil without TLS.
func (c *Cluster) TLSConfig() *tls.Config {
	if c.tls == nil {
		return nil
	}
	return c.tls.Clone()
}

func (c *Cluster) keystoreFile() string { return filepath.Join(c.dir, tlsDirName, keystoreName) }

// ensureCertificates makes the CA and the nodes' certificate on a TLS
// cluster's first run, and loads the CA for TLSConfig on every run.
func (c *Cluster) ensureCertificates() error {
	if !c.spec.TLS {
		return nil
	}
	if _, err := os.Stat(c.CAFile()); errors.Is(err, os.ErrNotExist) {
		if err := c.writeCertificates(); err != nil {
			return fmt.Errorf("kit: make the cluster's certificates: %w", err)
		}
	}
	pem, err := os.ReadFile(c.CAFile())
	if err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return fmt.Errorf("kit: %s holds no PEM certificate", c.CAFile())
	}
	c.tls = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	return nil
}

func (c *Cluster) writeCertificates() error {
	dir := filepath.Join(c.dir, tlsDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := testpki.NewCAValidFor("kraftd kit cluster "+c.layout.ClusterID, certLifetime)
	if err != nil {
		return err
	}
	now := time.Now()
	leaf, err := ca.Issue(testpki.Options{Subject: pkix.Name{CommonName: "kit node", Organization: []string{"kraftd kit"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certLifetime)})
	if err != nil {
		return err
	}
	// The keystore first: the CA file is what says the set is complete.
	if err := testpki.WriteAtomic(c.keystoreFile(), leaf.KeystorePEM()); err != nil {
		return err
	}
	return testpki.WriteAtomic(c.CAFile(), ca.CertPEM())
}

// tlsProps are the entries every node of a TLS cluster adds: its listener
// key and chain, and the CA it trusts as a client of the others.
func (c *Cluster) tlsProps() map[string]string {
	return map[string]string{
		"ssl.keystore.type": "PEM", "ssl.keystore.location": c.keystoreFile(),
		"ssl.truststore.type": "PEM", "ssl.truststore.location": c.CAFile(),
	}
}
