package kraftdtls

import (
	"crypto/x509"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/internal/testpki"
	"github.com/kraftd/kraftd/security"
)

// JKS stores that the JDK's keytool writes are read: the keystore's key
// and chain (the key under the store password, or under its own
// ssl.key.password), and the truststore's CA; a wrong password is named.
func TestJKSStoresFromKeytool(t *testing.T) {
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool (a JDK) is not installed; compat needs one anyway")
	}
	ca, err := testpki.NewCA("kraftd test ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(testpki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := leaf.WriteFiles(t.TempDir(), "controller-1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(keytool, append(args, "-J-Xmx128m")...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, out)
		}
	}
	ks, ksOwnKey, ts := filepath.Join(dir, "ks.jks"), filepath.Join(dir, "ks-key.jks"), filepath.Join(dir, "ts.jks")
	run("-importkeystore", "-noprompt", "-srckeystore", files.KeystoreP12, "-srcstoretype", "PKCS12", "-srcstorepass", testpki.P12Password,
		"-destkeystore", ks, "-deststoretype", "JKS", "-deststorepass", "jks-store-password", "-destkeypass", "jks-store-password")
	run("-importkeystore", "-noprompt", "-srckeystore", files.KeystoreP12, "-srcstoretype", "PKCS12", "-srcstorepass", testpki.P12Password,
		"-destkeystore", ksOwnKey, "-deststoretype", "JKS", "-deststorepass", "jks-store-password", "-destkeypass", "jks-key-password")
	caPEM := filepath.Join(dir, "ca.pem")
	if err := testpki.WriteAtomic(caPEM, ca.CertPEM()); err != nil {
		t.Fatal(err)
	}
	run("-importcert", "-noprompt", "-alias", "ca", "-file", caPEM, "-keystore", ts, "-storetype", "JKS", "-storepass", "jks-trust-password")

	jks := func(keystore string, keyPassword string) *Settings {
		t := &Settings{Listener: "CONTROLLER",
			Keystore:   StoreSettings{Type: "JKS", Location: keystore, Password: security.Secret{Value: "jks-store-password", Set: true}},
			Truststore: StoreSettings{Type: "JKS", Location: ts, Password: security.Secret{Value: "jks-trust-password", Set: true}}}
		if keyPassword != "" {
			t.KeyPassword = security.Secret{Value: keyPassword, Set: true}
		}
		return t
	}
	for name, settings := range map[string]*Settings{
		"key under the store password": jks(ks, ""),
		"key under ssl.key.password":   jks(ksOwnKey, "jks-key-password"),
	} {
		m, err := NewMaterial(settings, zerolog.Nop())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cert, roots := m.current()
		if !cert.Leaf.Equal(leaf.Cert) || len(cert.Certificate) != 2 {
			t.Errorf("%s: loaded %s with %d certificates", name, cert.Leaf.Subject, len(cert.Certificate))
		}
		if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: roots}); err != nil {
			t.Errorf("%s: the JKS truststore does not verify the server certificate: %v", name, err)
		}
	}
	wrongStore, wrongTrust := jks(ks, ""), jks(ks, "")
	wrongStore.Keystore.Password.Value = "not-the-store-password"
	wrongTrust.Truststore.Password.Value = "not-the-trust-password"
	for key, settings := range map[string]*Settings{
		"ssl.key.password":        jks(ksOwnKey, "not-the-key-password"),
		"ssl.keystore.location":   wrongStore,
		"ssl.truststore.password": wrongTrust,
	} {
		_, err := NewMaterial(settings, zerolog.Nop())
		var ke *security.KeyError
		if !errors.As(err, &ke) || ke.Key != key {
			t.Errorf("want an error naming %s: %v", key, err)
		}
		if err != nil && strings.Contains(err.Error(), "not-the") {
			t.Errorf("the error repeats a password: %v", err)
		}
	}
}
