package kraftdtls

import (
	"testing"

	"github.com/kraftd/kraftd/internal/testpki"
	"github.com/kraftd/kraftd/security"
)

// FuzzKeystorePEM feeds keystore file contents (a key, encrypted or not,
// and a chain) to the PEM reader and the PKCS#8 decryption behind it: it
// must return a certificate or an error, never panic.
func FuzzKeystorePEM(f *testing.F) {
	ca, err := testpki.NewCA("fuzz ca")
	if err != nil {
		f.Fatal(err)
	}
	leaf, err := ca.Issue(testpki.Options{})
	if err != nil {
		f.Fatal(err)
	}
	enc, err := leaf.EncryptedKeyPEM("pw")
	if err != nil {
		f.Fatal(err)
	}
	maxPBKDF2Iterations = 4096 // so that no input takes seconds
	f.Add(leaf.KeystorePEM(), false)
	f.Add(append(enc, leaf.ChainPEM()...), true)
	f.Fuzz(func(t *testing.T, data []byte, withPassword bool) {
		cert, err := pemKeyPair(data, data, security.Secret{Value: "pw", Set: withPassword})
		if (cert == nil) == (err == nil) {
			t.Fatalf("certificate %v with error %v", cert, err)
		}
	})
}
