package compat

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kraftd/kraftd/internal/testpki"
)

// tlsAddrs maps a listener address to the TLS configuration the harness
// dials it with; every helper that sends requests (Request, WaitLeader,
// DescribeQuorum, ...) then speaks TLS to it without a change.
var tlsAddrs sync.Map // string -> *tls.Config

// UseTLS makes the harness reach addr over TLS with cfg until the test
// ends.
func UseTLS(t testing.TB, addr string, cfg *tls.Config) {
	tlsAddrs.Store(addr, cfg)
	t.Cleanup(func() { tlsAddrs.Delete(addr) })
}

// secureConn runs the client handshake when addr was given to UseTLS.
func secureConn(ctx context.Context, addr string, nc net.Conn) (net.Conn, error) {
	v, ok := tlsAddrs.Load(addr)
	if !ok {
		return nc, nil
	}
	tc := tls.Client(nc, v.(*tls.Config).Clone())
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// TestPKI is a CA made for one test, with a certificate every controller
// of the test serves (it names 127.0.0.1 and localhost) and one for the
// harness and tools as a client; its files are PEM, which both kraftd and
// Apache read. kraftd members get the controllers' key encrypted (PBES2,
// AES-256) under KeyPassword, to exercise ssl.key.password; Apache 4.1 and
// 4.4 on Java 17 cannot read such a key (its PEM keystore asks Java for a
// "PBES2" SecretKeyFactory, which Java does not have), so Apache members
// get it unencrypted.
type TestPKI struct {
	CA         *testpki.CA
	Controller *testpki.Leaf
	Client     *testpki.Leaf
	Files      testpki.Files // the controllers' stores (KeystorePEM: key unencrypted)
	// KeystoreEncrypted is the controllers' PEM keystore with the key
	// encrypted under KeyPassword.
	KeystoreEncrypted string
	ClientKS          string // the client's PEM keystore
}

// KeyPassword is ssl.key.password of the controllers' PEM keystore.
const KeyPassword = "test-only-key-password"

// NewTestPKI makes the CA and certificates and writes their files into a
// directory of the test.
func NewTestPKI(t testing.TB) *TestPKI {
	t.Helper()
	ca, err := testpki.NewCA("kraftd compat ca")
	if err != nil {
		t.Fatal(err)
	}
	k := &TestPKI{CA: ca}
	if k.Controller, err = ca.Issue(testpki.Options{Subject: pkix.Name{CommonName: "controller", Organization: []string{"kraftd compat"}}}); err != nil {
		t.Fatal(err)
	}
	if k.Client, err = ca.Issue(testpki.Options{Subject: pkix.Name{CommonName: "admin", Organization: []string{"kraftd compat"}}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if k.Files, err = k.Controller.WriteFiles(dir, "controller"); err != nil {
		t.Fatal(err)
	}
	k.KeystoreEncrypted = filepath.Join(dir, "controller.keystore-encrypted.pem")
	if err := k.WriteControllerKeystore(k.Controller); err != nil {
		t.Fatal(err)
	}
	k.ClientKS = filepath.Join(dir, "client.keystore.pem")
	writeFile(t, k.ClientKS, k.Client.KeystorePEM())
	return k
}

// WriteControllerKeystore replaces both controller PEM keystore files
// with leaf's key and chain.
func (k *TestPKI) WriteControllerKeystore(leaf *testpki.Leaf) error {
	key, err := leaf.EncryptedKeyPEM(KeyPassword)
	if err != nil {
		return err
	}
	if err := testpki.WriteAtomic(k.KeystoreEncrypted, append(key, leaf.ChainPEM()...)); err != nil {
		return err
	}
	return testpki.WriteAtomic(k.Files.KeystorePEM, leaf.KeystorePEM())
}

// KraftdProps point a kraftd member at the encrypted keystore.
func (k *TestPKI) KraftdProps() map[string]string {
	return map[string]string{"ssl.keystore.location": k.KeystoreEncrypted, "ssl.key.password": KeyPassword}
}

// ServerProps are the server.properties entries of an SSL CONTROLLER
// listener with PEM stores and ssl.client.auth=clientAuth.
func (k *TestPKI) ServerProps(clientAuth string) map[string]string {
	return map[string]string{
		"listener.security.protocol.map": "CONTROLLER:SSL",
		"ssl.keystore.type":              "PEM", "ssl.keystore.location": k.Files.KeystorePEM,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": k.Files.TruststorePEM,
		"ssl.client.auth": clientAuth,
	}
}

// ClientConfig is the harness's TLS client configuration: it trusts the
// CA and presents the client certificate.
func (k *TestPKI) ClientConfig() *tls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(k.CA.Cert)
	cert := tls.Certificate{Certificate: [][]byte{k.Client.Cert.Raw, k.CA.Cert.Raw}, PrivateKey: k.Client.Key, Leaf: k.Client.Cert}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"}
}

// UseFor registers ClientConfig for every address.
func (k *TestPKI) UseFor(t testing.TB, addrs ...string) {
	for _, a := range addrs {
		UseTLS(t, a, k.ClientConfig())
	}
}

// WriteClientProperties writes an Apache tool's --command-config for SSL
// with the client certificate, and returns its path.
func (k *TestPKI) WriteClientProperties(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.properties")
	writeFile(t, path, []byte(FormatProperties(map[string]string{
		"security.protocol": "SSL",
		"ssl.keystore.type": "PEM", "ssl.keystore.location": k.ClientKS,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": k.Files.TruststorePEM,
	})))
	return path
}
