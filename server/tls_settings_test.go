package server

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/internal/testpki"
	"github.com/kraftd/kraftd/peer"
)

func loadProps(props map[string]string) (*Config, error) {
	c, err := ParseConfig(props)
	if err != nil {
		return nil, err
	}
	return c, c.LoadTLS(zerolog.Nop())
}

// loaded is the certificate and roots a listener's material serves now.
func loaded(c *Config, listener string) (*tls.Certificate, *x509.CertPool) {
	cc := c.tlsMaterial[listener].ClientConfig("")
	return &cc.Certificates[0], cc.RootCAs
}

func TestTLSStoresLoadInEveryFormat(t *testing.T) {
	k := newPKI(t)
	folded := func(b []byte) string { return strings.ReplaceAll(string(b), "\n", " ") } // a properties value's continuation lines
	for name, extra := range map[string]map[string]string{
		"PEM files": nil,
		"PKCS12 files": {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": k.files.KeystoreP12, "ssl.keystore.password": testpki.P12Password,
			"ssl.truststore.type": "PKCS12", "ssl.truststore.location": k.files.TruststoreP12, "ssl.truststore.password": testpki.P12Password},
		"PKCS12 under the default type JKS": {"ssl.keystore.type": "", "ssl.keystore.location": k.files.KeystoreP12, "ssl.keystore.password": testpki.P12Password,
			"ssl.key.password": testpki.P12Password, "ssl.truststore.type": "JKS", "ssl.truststore.location": k.files.TruststoreP12, "ssl.truststore.password": testpki.P12Password},
		"inline PEM": {"ssl.keystore.location": "", "ssl.truststore.location": "",
			"ssl.keystore.certificate.chain": folded(k.server.ChainPEM()), "ssl.keystore.key": folded(k.server.KeyPEM()),
			"ssl.truststore.certificates": folded(k.ca.CertPEM())},
	} {
		props := sslProps(t, k, nil)
		for key, v := range extra {
			if v == "" {
				delete(props, key)
			} else {
				props[key] = v
			}
		}
		c, err := loadProps(props)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		cert, roots := loaded(c, "CONTROLLER")
		if !cert.Leaf.Equal(k.server.Cert) || len(cert.Certificate) != 2 || roots == nil {
			t.Errorf("%s: loaded %s with %d certificates", name, cert.Leaf.Subject, len(cert.Certificate))
		}
	}
}

func TestTLSSettingsErrorsNameTheKey(t *testing.T) {
	k := newPKI(t)
	jks := filepath.Join(t.TempDir(), "ks.jks")
	if err := os.WriteFile(jks, []byte{0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2}, 0o600); err != nil {
		t.Fatal(err)
	}
	stranger := k.issue(t, testpki.Options{})
	mismatched := filepath.Join(t.TempDir(), "mismatched.pem")
	if err := os.WriteFile(mismatched, append(stranger.KeyPEM(), k.server.ChainPEM()...), 0o600); err != nil {
		t.Fatal(err)
	}
	p12 := map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": k.files.KeystoreP12}
	for want, extra := range map[string]map[string]string{
		"ssl.keystore.password":                          {"ssl.keystore.password": "secret-value"}, // PEM takes none
		"listener.name.controller.ssl.keystore.password": {"listener.name.controller.ssl.keystore.password": "secret-value"},
		"ssl.client.auth":                                {"ssl.client.auth": "sometimes"},
		"ssl.enabled.protocols":                          {"ssl.enabled.protocols": "TLSv1.1,TLSv1.3"},
		"ssl.protocol":                                   {"ssl.protocol": "SSLv3"},
		"ssl.cipher.suites":                              {"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"},
		"ssl.endpoint.identification.algorithm":          {"ssl.endpoint.identification.algorithm": "ldap"},
		"ssl.principal.mapping.rules":                    {"ssl.principal.mapping.rules": "RULE:nope"},
		"ssl.keymanager.algorithm":                       {"ssl.keymanager.algorithm": "SomeHSM"},
		"ssl.provider":                                   {"ssl.provider": "BC"},
		"ssl.engine.factory.class":                       {"ssl.engine.factory.class": "com.example.Engine"},
		"sasl.enabled.mechanisms":                        {"sasl.enabled.mechanisms": "PLAIN"},
		"ssl.keystore.location":                          {"ssl.keystore.location": mismatched},
		"ssl.truststore.location":                        {"ssl.truststore.location": filepath.Join(t.TempDir(), "missing.pem")},
		"ssl.keystore.key":                               {"ssl.keystore.key": string(k.server.KeyPEM())},
		"listener.name.CONTROLLER.ssl.client.auth":       {"listener.name.CONTROLLER.ssl.client.auth": "required"},
	} {
		props := sslProps(t, k, extra)
		_, err := loadProps(props)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != want {
			t.Errorf("%s: %v", want, err)
			continue
		}
		if strings.Contains(err.Error(), "secret-value") {
			t.Errorf("%s: the message repeats a secret: %v", want, err)
		}
	}
	// A truncated JKS file is named by its location.
	if _, err := loadProps(sslProps(t, k, map[string]string{"listener.name.controller.ssl.keystore.type": "JKS", "ssl.keystore.location": jks, "ssl.keystore.password": "x"})); err == nil ||
		!strings.Contains(err.Error(), "ssl.keystore.location") || !strings.Contains(err.Error(), "JKS store") {
		t.Errorf("a truncated JKS keystore: %v", err)
	}
	// A PEM file under the default type JKS is named as PEM.
	props0 := sslProps(t, k, nil)
	delete(props0, "ssl.truststore.type")
	if _, err := loadProps(props0); err == nil || !strings.Contains(err.Error(), "config ssl.truststore.type") || !strings.Contains(err.Error(), "set the type to PEM") {
		t.Errorf("PEM truststore typed JKS: %v", err)
	}
	// A PKCS12 keystore needs its password, and a wrong one is named.
	props := sslProps(t, k, p12)
	if _, err := loadProps(props); err == nil || !strings.Contains(err.Error(), "ssl.keystore.password") {
		t.Errorf("PKCS12 without a password: %v", err)
	}
	props["ssl.keystore.password"] = "wrong-password"
	if _, err := loadProps(props); err == nil || !strings.Contains(err.Error(), "ssl.keystore.location") || strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("PKCS12 with a wrong password: %v", err)
	}
}

func TestTLSSettingsListenerOverridesAndVersions(t *testing.T) {
	k := newPKI(t)
	c, err := ParseConfig(sslProps(t, k, map[string]string{
		"ssl.client.auth": "none", "listener.name.controller.ssl.client.auth": "required",
		"ssl.enabled.protocols": "TLSv1.2", "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		"ssl.endpoint.identification.algorithm": "",
	}))
	if err != nil {
		t.Fatal(err)
	}
	s := c.TLS["CONTROLLER"]
	if s.ClientAuth != tls.RequireAndVerifyClientCert || s.MinVersion != tls.VersionTLS12 || s.MaxVersion != tls.VersionTLS12 ||
		len(s.CipherSuites) != 1 || s.VerifyHostname {
		t.Fatalf("%+v", s)
	}
	if len(c.Unknown) != 0 {
		t.Errorf("honoured keys reported unused: %v", c.Unknown)
	}
	// A list without TLS 1.3 suites turns TLS 1.3 off, as in Java.
	c, err = ParseConfig(sslProps(t, k, map[string]string{"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}))
	if err != nil || c.TLS["CONTROLLER"].MaxVersion != tls.VersionTLS12 {
		t.Fatalf("%v %+v", err, c.TLS["CONTROLLER"])
	}
}

// The peer client reaches an SSL controller listener with its keystore,
// checks the peer's host name by default, and logs a failure once.
func TestPeersOverMutualTLS(t *testing.T) {
	k := newPKI(t)
	_, addr, b, _ := startTLSServer(t, sslProps(t, k, map[string]string{"ssl.client.auth": "required"}))
	dial := func(t *testing.T, extra map[string]string) (peer.Result, *syncBuffer) {
		c, err := loadProps(sslProps(t, k, extra))
		if err != nil {
			t.Fatal(err)
		}
		logs := &syncBuffer{}
		results := make(chan peer.Result, 1)
		p := peer.New("raft-client-2", 5*time.Second, func(r peer.Result) { results <- r }, zerolog.New(logs))
		defer p.Close()
		usePeerSecurity(t, p, c)
		p.SetAddress(1, addr)
		v := kmsg.NewPtrVoteRequest()
		v.SetVersion(1)
		p.Send(1, 1, v)
		return <-results, logs
	}
	if r, _ := dial(t, nil); r.Err != nil {
		t.Fatalf("mutual TLS: %v", r.Err)
	}
	if p := <-b.seen; p.String() != "User:CN=controller-1" {
		t.Errorf("the server saw %s", p)
	}

	// A certificate that names another host fails the https check ...
	elsewhere := k.issue(t, testpki.Options{Subject: pkix.Name{CommonName: "controller-1"}, DNSNames: []string{"other.example"}})
	files, err := elsewhere.WriteFiles(t.TempDir(), "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	_, addr2, _, _ := startTLSServer(t, sslProps(t, k, map[string]string{"ssl.keystore.location": files.KeystorePEM}))
	addr = addr2
	r, logs := dial(t, nil)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "does not name the host") {
		t.Fatalf("host name mismatch: %v", r.Err)
	}
	logs.waitLog(t, "TLS handshake with peer failed", `"peer":1`, addr2)
	// ... which ssl.endpoint.identification.algorithm= turns off.
	if r, _ := dial(t, map[string]string{"ssl.endpoint.identification.algorithm": ""}); r.Err != nil {
		t.Fatalf("without host name checks: %v", r.Err)
	}
}

// An honoured ssl.* key passes only where an SSL listener uses it.
func TestTLSKeysApplyOnlyToSSLListeners(t *testing.T) {
	k := newPKI(t)
	props := sslProps(t, k, map[string]string{
		"listeners":                      "CONTROLLER://127.0.0.1:0,PLAIN://127.0.0.1:0",
		"listener.security.protocol.map": "CONTROLLER:SSL,PLAIN:PLAINTEXT",
	})
	if _, err := ParseConfig(props); err != nil {
		t.Fatalf("top-level keys with one SSL listener: %v", err)
	}
	props["listener.name.plain.ssl.client.auth"] = "required"
	var ce *ConfigError
	if _, err := ParseConfig(props); !errors.As(err, &ce) || ce.Key != "listener.name.plain.ssl.client.auth" {
		t.Fatalf("an override for a PLAINTEXT listener: %v", err)
	}
}

// An encrypted PEM key is read with ssl.key.password; a wrong or missing
// password is named.
func TestEncryptedPEMKey(t *testing.T) {
	k := newPKI(t)
	enc, err := k.server.EncryptedKeyPEM("key-secret")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "encrypted.pem")
	if err := os.WriteFile(path, append(enc, k.server.ChainPEM()...), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := loadProps(sslProps(t, k, map[string]string{"ssl.keystore.location": path, "ssl.key.password": "key-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if cert, _ := loaded(c, "CONTROLLER"); !cert.Leaf.Equal(k.server.Cert) {
		t.Fatal("the decrypted keystore holds another certificate")
	}
	for password, want := range map[string]string{"wrong-secret": "ssl.key.password", "": "ssl.key.password"} {
		extra := map[string]string{"ssl.keystore.location": path}
		if password != "" {
			extra["ssl.key.password"] = password
		}
		_, err := loadProps(sslProps(t, k, extra))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != want || strings.Contains(err.Error(), "secret") {
			t.Errorf("password %q: %v", password, err)
		}
	}
}
