package kraftdtls

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
)

// Java KeyStores (JKS, magic 0xFEEDFEED, Apache's default store type) are
// read with github.com/pavlo-v-chernykh/keystore-go/v4, which checks the
// store's integrity digest with the store password and undoes JKS's key
// protection. JCEKS (0xCECECECE) is not read.

// jksKeyPair reads a JKS keystore's one private key entry and its chain;
// the key is protected by keyPassword (Apache's ssl.key.password, which
// defaults to the store password).
func jksKeyPair(data []byte, storePassword, keyPassword string) (*tls.Certificate, error) {
	ks, err := loadJKS(data, storePassword)
	if err != nil {
		return nil, err
	}
	var aliases []string
	for _, a := range ks.Aliases() {
		if ks.IsPrivateKeyEntry(a) {
			aliases = append(aliases, a)
		}
	}
	if len(aliases) != 1 {
		return nil, fmt.Errorf("JKS keystore holds %d private key entries, want exactly one", len(aliases))
	}
	entry, err := ks.GetPrivateKeyEntry(aliases[0], []byte(keyPassword))
	if err != nil {
		return nil, &keyPasswordError{fmt.Errorf("JKS key entry %q: %w", aliases[0], err)}
	}
	key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("JKS key entry %q: %w", aliases[0], err)
	}
	if len(entry.CertificateChain) == 0 {
		return nil, fmt.Errorf("JKS key entry %q has no certificate", aliases[0])
	}
	cert := &tls.Certificate{PrivateKey: key}
	for _, c := range entry.CertificateChain {
		cert.Certificate = append(cert.Certificate, c.Content)
	}
	if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
		return nil, fmt.Errorf("JKS key entry %q: %w", aliases[0], err)
	}
	if err := checkKeyMatches(cert); err != nil {
		return nil, err
	}
	return cert, nil
}

// jksTrustStore reads the trusted certificate entries of a JKS truststore.
func jksTrustStore(data []byte, password string) ([]*x509.Certificate, error) {
	ks, err := loadJKS(data, password)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, a := range ks.Aliases() {
		if !ks.IsTrustedCertificateEntry(a) {
			continue
		}
		e, err := ks.GetTrustedCertificateEntry(a)
		if err != nil {
			return nil, err
		}
		c, err := x509.ParseCertificate(e.Certificate.Content)
		if err != nil {
			return nil, fmt.Errorf("JKS entry %q: %w", a, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func loadJKS(data []byte, password string) (keystore.KeyStore, error) {
	if !bytes.HasPrefix(data, []byte{0xFE, 0xED, 0xFE, 0xED}) {
		return keystore.KeyStore{}, errors.New("is a JCEKS keystore, which kraftd does not read; convert it with keytool -importkeystore -deststoretype PKCS12")
	}
	if password == "" {
		// A JVM reads a JKS without a password, unchecked; kraftd checks
		// the integrity digest, which needs it.
		return keystore.KeyStore{}, errors.New("a JKS store needs its password set, to check its integrity")
	}
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return keystore.KeyStore{}, fmt.Errorf("JKS store: %w (a wrong password fails the integrity check)", err)
	}
	return ks, nil
}
