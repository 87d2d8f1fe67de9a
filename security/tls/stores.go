package kraftdtls

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/kraftd/kraftd/security"
)

// Keystores and truststores are read here. PKCS12 goes through go-pkcs12,
// JKS through keystore-go (jks.go); PEM is read leniently (Apache
// accepts PEM whose line breaks a properties file folded away). A
// JKS-typed file that is really PKCS12 is read as PKCS12, as a JDK does.

// loadKeystore reads the listener's keystore into a certificate with its
// chain. The error (a *security.KeyError) names the key to fix.
func loadKeystore(t *Settings) (*tls.Certificate, error) {
	ks := t.Keystore
	if !ks.Configured() {
		return nil, &security.KeyError{Key: t.Key("ssl.keystore.location"), Err: fmt.Errorf("an SSL listener (%s) needs a keystore: set ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain", t.Listener)}
	}
	if ks.Inline != "" {
		cert, err := pemKeyPair([]byte(ks.Inline), []byte(ks.InlineKey.Value), t.KeyPassword)
		var kp *keyPasswordError
		if errors.As(err, &kp) {
			return nil, &security.KeyError{Key: t.Key("ssl.key.password"), Err: err}
		}
		if err != nil {
			return nil, &security.KeyError{Key: t.Key("ssl.keystore.key"), Err: err}
		}
		return cert, nil
	}
	data, err := os.ReadFile(ks.Location)
	if err != nil {
		return nil, &security.KeyError{Key: t.Key("ssl.keystore.location"), Err: err}
	}
	var cert *tls.Certificate
	switch storeFormat(ks.Type, data) {
	case "PEM":
		cert, err = pemKeyPair(data, data, t.KeyPassword)
	case "PKCS12":
		if t.KeyPassword.Set && t.KeyPassword.Value != ks.Password.Value {
			return nil, &security.KeyError{Key: t.Key("ssl.key.password"), Err: errors.New("differs from ssl.keystore.password; kraftd reads PKCS12 keystores whose key has the store's password (as keytool writes them)")}
		}
		cert, err = pkcs12KeyPair(data, ks.Password.Value)
	case "JKS":
		keyPassword := ks.Password.Value
		if t.KeyPassword.Set {
			keyPassword = t.KeyPassword.Value
		}
		if cert, err = jksKeyPair(data, ks.Password.Value, keyPassword); err != nil && !ks.Password.Set {
			return nil, &security.KeyError{Key: t.Key("ssl.keystore.password"), Err: fmt.Errorf("%s: %w", ks.Location, err)}
		}
	default:
		return nil, &security.KeyError{Key: t.Key("ssl.keystore.type"), Err: errJKS(ks.Location, data)}
	}
	var kp *keyPasswordError
	if errors.As(err, &kp) {
		return nil, &security.KeyError{Key: t.Key("ssl.key.password"), Err: fmt.Errorf("%s: %w", ks.Location, err)}
	}
	if err != nil {
		return nil, &security.KeyError{Key: t.Key("ssl.keystore.location"), Err: fmt.Errorf("%s: %w", ks.Location, err)}
	}
	return cert, nil
}

// keyPasswordError is a key that ssl.key.password does not decrypt.
type keyPasswordError struct{ error }

func (e *keyPasswordError) Unwrap() error { return e.error }

// loadTruststore reads the listener's trusted certificates; nil with no
// error means none is configured, and the system's roots are used, as a
// JVM uses its cacerts.
func loadTruststore(t *Settings) (*x509.CertPool, error) {
	ts := t.Truststore
	if !ts.Configured() {
		return nil, nil
	}
	var certs []*x509.Certificate
	var err error
	key := t.Key("ssl.truststore.location")
	if ts.Inline != "" {
		key = t.Key("ssl.truststore.certificates")
		certs, err = pemCertificates([]byte(ts.Inline))
	} else {
		var data []byte
		if data, err = os.ReadFile(ts.Location); err != nil {
			return nil, &security.KeyError{Key: key, Err: err}
		}
		switch storeFormat(ts.Type, data) {
		case "PEM":
			certs, err = pemCertificates(data)
		case "PKCS12":
			certs, err = pkcs12.DecodeTrustStore(data, ts.Password.Value)
		case "JKS":
			if certs, err = jksTrustStore(data, ts.Password.Value); err != nil {
				key = t.Key("ssl.truststore.password")
			}
		default:
			return nil, &security.KeyError{Key: t.Key("ssl.truststore.type"), Err: errJKS(ts.Location, data)}
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", ts.Location, err)
		}
	}
	if err == nil && len(certs) == 0 {
		err = errors.New("holds no certificate")
	}
	if err != nil {
		return nil, &security.KeyError{Key: key, Err: err}
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// storeFormat is how a store file is read: PEM, PKCS12, JKS, or "" (not
// a store kraftd reads). A JKS-typed file that holds PKCS12 is read as
// PKCS12, as a JDK does, and a PKCS12-typed JKS file as JKS.
func storeFormat(declared string, data []byte) string {
	switch {
	case declared == "PEM":
		return "PEM"
	case bytes.HasPrefix(data, []byte{0xFE, 0xED, 0xFE, 0xED}), bytes.HasPrefix(data, []byte{0xCE, 0xCE, 0xCE, 0xCE}):
		return "JKS"
	case len(data) > 0 && data[0] == 0x30: // a DER SEQUENCE: PKCS12's PFX
		return "PKCS12"
	}
	return ""
}

func errJKS(path string, data []byte) error {
	if bytes.Contains(data, []byte("-----BEGIN ")) {
		return fmt.Errorf("%s holds PEM, but the store's type is JKS (Apache's default); set the type to PEM", path)
	}
	return fmt.Errorf("%s is neither a JKS, PKCS12 nor PEM store", path)
}

func pkcs12KeyPair(data []byte, password string) (*tls.Certificate, error) {
	key, leaf, chain, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		return nil, fmt.Errorf("PKCS12 keystore: %w (kraftd reads a keystore with one key entry)", err)
	}
	cert := &tls.Certificate{PrivateKey: key, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	if err := checkKeyMatches(cert); err != nil {
		return nil, err
	}
	return cert, nil
}

// pemKeyPair reads a key (from keyPEM) and its chain (from chainPEM); a
// PEM keystore file is both.
func pemKeyPair(chainPEM, keyPEM []byte, password security.Secret) (*tls.Certificate, error) {
	certs, err := pemCertificates(chainPEM)
	if err != nil {
		return nil, err
	}
	if len(certs) == 0 {
		return nil, errors.New("holds no certificate")
	}
	keys := pemBlocks(keyPEM, "PRIVATE KEY")
	if len(keys) != 1 {
		return nil, fmt.Errorf("holds %d private keys, want exactly one", len(keys))
	}
	block := keys[0]
	switch {
	case block.typ == "ENCRYPTED PRIVATE KEY" && !password.Set:
		return nil, &keyPasswordError{errors.New("the key is encrypted (ENCRYPTED PRIVATE KEY), but ssl.key.password is not set")}
	case block.typ == "ENCRYPTED PRIVATE KEY":
		der, err := decryptPKCS8(block.der, password.Value)
		if err != nil {
			return nil, &keyPasswordError{err}
		}
		block = pemBlock{typ: "PRIVATE KEY", der: der}
	case password.Set:
		return nil, errors.New("ssl.key.password is set but the PEM key is not encrypted")
	}
	key, err := parsePrivateKey(block)
	if err != nil {
		return nil, err
	}
	cert := &tls.Certificate{PrivateKey: key, Leaf: certs[0]}
	for _, c := range certs {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	if err := checkKeyMatches(cert); err != nil {
		return nil, err
	}
	return cert, nil
}

func parsePrivateKey(b pemBlock) (crypto.PrivateKey, error) {
	var key crypto.PrivateKey
	var err error
	switch b.typ {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(b.der)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.der)
	default:
		key, err = x509.ParsePKCS8PrivateKey(b.der)
	}
	if err != nil {
		return nil, fmt.Errorf("private key does not decode: %w", err)
	}
	return key, nil
}

// checkKeyMatches refuses a keystore whose key is not the certificate's.
func checkKeyMatches(c *tls.Certificate) error {
	pub, ok := c.Leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	signer, isSigner := c.PrivateKey.(crypto.Signer)
	if !ok || !isSigner || !pub.Equal(signer.Public()) {
		return errors.New("the private key does not belong to the first certificate of the chain")
	}
	return nil
}

func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, b := range pemBlocks(data, "CERTIFICATE") {
		c, err := x509.ParseCertificate(b.der)
		if err != nil {
			return nil, fmt.Errorf("certificate does not decode: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

type pemBlock struct {
	typ string
	der []byte
}

var pemBlockPattern = regexp.MustCompile(`-----BEGIN ([A-Z ]+)-----([^-]*)-----END ([A-Z ]+)-----`)

// pemBlocks finds the blocks whose type ends in suffix. Whitespace inside a
// block is dropped, so a block folded onto one line (a properties value)
// reads as well as a file's.
func pemBlocks(data []byte, suffix string) []pemBlock {
	var out []pemBlock
	for _, m := range pemBlockPattern.FindAllSubmatch(data, -1) {
		typ := string(m[1])
		if typ != string(m[3]) || !strings.HasSuffix(typ, suffix) {
			continue
		}
		body := strings.Join(strings.Fields(strings.ReplaceAll(string(m[2]), `\n`, "")), "")
		der, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			continue
		}
		out = append(out, pemBlock{typ: typ, der: der})
	}
	return out
}
