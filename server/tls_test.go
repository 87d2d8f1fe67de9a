package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/internal/testpki"
	"github.com/kraftd/kraftd/internal/wiretest"
	"github.com/kraftd/kraftd/protocol"
)

// pki is one test's CA, server certificate and their files.
type pki struct {
	ca     *testpki.CA
	server *testpki.Leaf
	files  testpki.Files
	dir    string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	ca, err := testpki.NewCA("kraftd test ca")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue(testpki.Options{Subject: pkix.Name{CommonName: "controller-1"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := srv.WriteFiles(dir, "controller-1")
	if err != nil {
		t.Fatal(err)
	}
	return &pki{ca: ca, server: srv, files: files, dir: dir}
}

func (k *pki) issue(t *testing.T, o testpki.Options) *testpki.Leaf {
	t.Helper()
	l, err := k.ca.Issue(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// syncBuffer is a log sink tests read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitLog waits until the log holds every part on one line.
func (s *syncBuffer) waitLog(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(s.String(), "\n") {
			if containsAll(line, parts) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no log line with %q in:\n%s", parts, s.String())
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// principalBackend records the principal of each KRaft request.
type principalBackend struct {
	stillBackend
	seen chan Principal
}

func (b *principalBackend) Raft(ctx context.Context, r *Request) (kmsg.Response, error) {
	b.seen <- r.Principal
	return b.stillBackend.Raft(ctx, r)
}

func sslProps(t *testing.T, k *pki, extra map[string]string) map[string]string {
	p := map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://127.0.0.1:0", "log.dirs": t.TempDir(),
		"listener.security.protocol.map": "CONTROLLER:SSL",
		"ssl.keystore.type":              "PEM", "ssl.keystore.location": k.files.KeystorePEM,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": k.files.TruststorePEM,
	}
	for key, v := range extra {
		p[key] = v
	}
	return p
}

// startTLSServer starts a server from props; its log goes to the buffer.
func startTLSServer(t *testing.T, props map[string]string) (*Server, string, *principalBackend, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	log := zerolog.New(zerolog.MultiLevelWriter(logs, zerolog.NewTestWriter(t)))
	cfg, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.LoadTLS(log); err != nil {
		t.Fatal(err)
	}
	b := &principalBackend{stillBackend{wiretest.NewBackend()}, make(chan Principal, 16)}
	s := New(cfg, b, log)
	// Short enough for the stalled-handshake check, long enough for a real
	// handshake on a loaded machine (300 ms failed under load 40).
	s.handshakeLimit = 3 * time.Second
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, s.Addr("CONTROLLER").String(), b, logs
}

// dialTLSClient connects with leaf as the client certificate (nil: none),
// trusting roots.
func dialTLSClient(t *testing.T, addr string, leaf *testpki.Leaf, roots *x509.CertPool) (*wiretest.Conn, error) {
	t.Helper()
	cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	if leaf != nil {
		// Sent whatever CAs the server names, so a wrong CA reaches it.
		cert := &tls.Certificate{Certificate: [][]byte{leaf.Cert.Raw}, PrivateKey: leaf.Key, Leaf: leaf.Cert}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return wiretest.NewConn(t, c), nil
}

func pool(cas ...*testpki.CA) *x509.CertPool {
	p := x509.NewCertPool()
	for _, ca := range cas {
		p.AddCert(ca.Cert)
	}
	return p
}

func sendVote(c *wiretest.Conn) {
	v := kmsg.NewPtrVoteRequest()
	v.SetVersion(1)
	c.Send(v, 1)
	c.Recv(v)
}

func TestMutualTLSConnectionKnowsItsPrincipal(t *testing.T) {
	k := newPKI(t)
	_, addr, b, _ := startTLSServer(t, sslProps(t, k, map[string]string{
		"listener.name.controller.ssl.client.auth": "required",
		"ssl.principal.mapping.rules":              "RULE:^CN=([^,]+),O=(.*)$/$1@$2/L,DEFAULT",
	}))
	client := k.issue(t, testpki.Options{Subject: pkix.Name{CommonName: "Controller-2", Organization: []string{"Kraftd"}}})
	c, err := dialTLSClient(t, addr, client, pool(k.ca))
	if err != nil {
		t.Fatal(err)
	}
	sendVote(c)
	if p := <-b.seen; p.String() != "User:controller-2@kraftd" {
		t.Fatalf("principal %s", p)
	}
}

func TestTLSWithoutClientCertificateIsAnonymous(t *testing.T) {
	k := newPKI(t)
	_, addr, b, _ := startTLSServer(t, sslProps(t, k, map[string]string{"ssl.client.auth": "requested"}))
	c, err := dialTLSClient(t, addr, nil, pool(k.ca))
	if err != nil {
		t.Fatal(err)
	}
	sendVote(c)
	if p := <-b.seen; p != Anonymous {
		t.Fatalf("principal %s", p)
	}
}

// Each failure closes only its own connection, logged with the peer and
// the reason; a good client is served throughout.
func TestTLSFailuresCloseOnlyThatConnection(t *testing.T) {
	k := newPKI(t)
	_, addr, _, logs := startTLSServer(t, sslProps(t, k, map[string]string{"ssl.client.auth": "required"}))
	good, err := dialTLSClient(t, addr, k.issue(t, testpki.Options{}), pool(k.ca))
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := testpki.NewCA("another ca")
	if err != nil {
		t.Fatal(err)
	}
	expired := k.issue(t, testpki.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	for name, tc := range map[string]struct {
		leaf   *testpki.Leaf
		reason string
	}{
		"wrong CA":       {must(otherCA.Issue(testpki.Options{})), "not signed by a CA of the truststore"},
		"expired":        {expired, "expired or is not yet valid"},
		"no certificate": {nil, "didn't provide a certificate"},
	} {
		c, err := dialTLSClient(t, addr, tc.leaf, pool(k.ca))
		if err == nil {
			// TLS 1.3: the client learns of the refusal on its first read
			// (the write may already see the reset).
			c.Write([]byte{0, 0, 0, 1, 0})
			if !c.Closed() {
				t.Errorf("%s: connection stays open", name)
			}
		}
		logs.waitLog(t, "TLS handshake failed", tc.reason)
	}

	plain := wiretest.Dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	plain.Write(protocol.AppendFrame(nil, req.AppendTo(protocol.AppendRequestHeader(nil, req, 1, "test"))))
	if !plain.Closed() {
		t.Error("plaintext client on a TLS port: connection stays open")
	}
	logs.waitLog(t, "TLS handshake failed", "sent plaintext", plain.LocalAddr().String())

	silent := wiretest.Dial(t, addr)
	if !silent.Closed() {
		t.Error("a client that never starts its handshake stays connected")
	}
	logs.waitLog(t, "did not finish within", silent.LocalAddr().String())

	sendVote(good)
}

func TestTLSClientOnPlaintextPortIsNamed(t *testing.T) {
	_, addr, _, logs := startTLSServer(t, map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://127.0.0.1:0", "log.dirs": t.TempDir(),
	})
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true})
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err == nil {
		t.Fatal("a TLS handshake succeeded on a PLAINTEXT listener")
	}
	logs.waitLog(t, "TLS handshake on a plaintext listener", raw.LocalAddr().String())
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A keystore replaced on disk is served to the next connection; one that
// names another subject is refused unless ssl.allow.dn.changes allows it.
func TestReplacedKeystoreServedToNewConnections(t *testing.T) {
	k := newPKI(t)
	_, addr, _, logs := startTLSServer(t, sslProps(t, k, nil))
	serial := func() string {
		c, err := dialTLSClient(t, addr, nil, pool(k.ca))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.Conn.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
	}
	if got := serial(); got != k.server.Cert.SerialNumber.Text(16) {
		t.Fatalf("serving %s", got)
	}
	renewed := k.issue(t, testpki.Options{Subject: pkix.Name{CommonName: "controller-1"}})
	if err := testpki.WriteAtomic(k.files.KeystorePEM, renewed.KeystorePEM()); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != renewed.Cert.SerialNumber.Text(16) {
		t.Fatalf("after renewal serving %s, want %s", got, renewed.Cert.SerialNumber.Text(16))
	}
	logs.waitLog(t, "now serving certificate", renewed.Cert.SerialNumber.Text(16))

	other := k.issue(t, testpki.Options{Subject: pkix.Name{CommonName: "someone-else"}})
	if err := testpki.WriteAtomic(k.files.KeystorePEM, other.KeystorePEM()); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != renewed.Cert.SerialNumber.Text(16) {
		t.Fatalf("a keystore with another subject was taken: serving %s", got)
	}
	logs.waitLog(t, "ssl.allow.dn.changes")
	if err := os.WriteFile(k.files.KeystorePEM, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != renewed.Cert.SerialNumber.Text(16) {
		t.Fatalf("an unreadable keystore replaced the served one: %s", got)
	}
}

// A truststore replaced on disk decides the next client's fate.
func TestReplacedTruststoreTrustsNewClients(t *testing.T) {
	k := newPKI(t)
	_, addr, _, logs := startTLSServer(t, sslProps(t, k, map[string]string{"ssl.client.auth": "required"}))
	newCA, err := testpki.NewCA("the next ca")
	if err != nil {
		t.Fatal(err)
	}
	client := must(newCA.Issue(testpki.Options{}))
	accepted := func() bool {
		c, err := dialTLSClient(t, addr, client, pool(k.ca))
		if err != nil {
			return false
		}
		defer c.Close()
		v := kmsg.NewPtrApiVersionsRequest()
		c.Write(protocol.AppendFrame(nil, v.AppendTo(protocol.AppendRequestHeader(nil, v, 1, "test"))))
		_, err = protocol.ReadFrame(c, 1<<20)
		return err == nil
	}
	if accepted() {
		t.Fatal("a client of an untrusted CA was served")
	}
	if err := testpki.WriteAtomic(k.files.TruststorePEM, append(k.ca.CertPEM(), newCA.CertPEM()...)); err != nil {
		t.Fatal(err)
	}
	if !accepted() {
		t.Fatal("after the truststore gained its CA, the client is still refused")
	}
	logs.waitLog(t, "truststore replaced on disk")
}
