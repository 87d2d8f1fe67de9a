package server

import (
	"crypto/x509"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/internal/testpki"
)

// JKS stores that the JDK's keytool writes are read: the keystore's key
// and chain (the key under the store password, or under its own
// ssl.key.password), and the truststore's CA; a wrong password is named.
func TestJKSStoresFromKeytool(t *testing.T) {
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool (a JDK) is not installed; compat needs one anyway")
	}
	k := newPKI(t)
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(keytool, append(args, "-J-Xmx128m")...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, out)
		}
	}
	ks, ksOwnKey, ts := filepath.Join(dir, "ks.jks"), filepath.Join(dir, "ks-key.jks"), filepath.Join(dir, "ts.jks")
	run("-importkeystore", "-noprompt", "-srckeystore", k.files.KeystoreP12, "-srcstoretype", "PKCS12", "-srcstorepass", testpki.P12Password,
		"-destkeystore", ks, "-deststoretype", "JKS", "-deststorepass", "jks-store-password", "-destkeypass", "jks-store-password")
	run("-importkeystore", "-noprompt", "-srckeystore", k.files.KeystoreP12, "-srcstoretype", "PKCS12", "-srcstorepass", testpki.P12Password,
		"-destkeystore", ksOwnKey, "-deststoretype", "JKS", "-deststorepass", "jks-store-password", "-destkeypass", "jks-key-password")
	caPEM := filepath.Join(dir, "ca.pem")
	if err := testpki.WriteAtomic(caPEM, k.ca.CertPEM()); err != nil {
		t.Fatal(err)
	}
	run("-importcert", "-noprompt", "-alias", "ca", "-file", caPEM, "-keystore", ts, "-storetype", "JKS", "-storepass", "jks-trust-password")

	jks := func(keystore string, extra map[string]string) map[string]string {
		props := sslProps(t, k, map[string]string{
			"ssl.keystore.type": "JKS", "ssl.keystore.location": keystore, "ssl.keystore.password": "jks-store-password",
			"ssl.truststore.type": "JKS", "ssl.truststore.location": ts, "ssl.truststore.password": "jks-trust-password",
		})
		for key, v := range extra {
			props[key] = v
		}
		return props
	}
	for name, props := range map[string]map[string]string{
		"key under the store password": jks(ks, nil),
		"key under ssl.key.password":   jks(ksOwnKey, map[string]string{"ssl.key.password": "jks-key-password"}),
	} {
		cfg, err := loadProps(props)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cert, roots := cfg.tlsMaterial["CONTROLLER"].current()
		if !cert.Leaf.Equal(k.server.Cert) || len(cert.Certificate) != 2 {
			t.Errorf("%s: loaded %s with %d certificates", name, cert.Leaf.Subject, len(cert.Certificate))
		}
		if _, err := k.server.Cert.Verify(x509.VerifyOptions{Roots: roots}); err != nil {
			t.Errorf("%s: the JKS truststore does not verify the server certificate: %v", name, err)
		}
	}
	for key, props := range map[string]map[string]string{
		"ssl.key.password":        jks(ksOwnKey, map[string]string{"ssl.key.password": "not-the-key-password"}),
		"ssl.keystore.location":   jks(ks, map[string]string{"ssl.keystore.password": "not-the-store-password"}),
		"ssl.truststore.password": jks(ks, map[string]string{"ssl.truststore.password": "not-the-trust-password"}),
	} {
		_, err := loadProps(props)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("want an error naming %s: %v", key, err)
		}
		if err != nil && strings.Contains(err.Error(), "not-the") {
			t.Errorf("the error repeats a password: %v", err)
		}
	}
}
