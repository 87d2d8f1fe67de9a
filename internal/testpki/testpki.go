// Package testpki makes throwaway certificate authorities and certificates
// for tests, with Go's crypto/x509, so that no key is ever committed. It
// owns nothing a production path uses: a key made here lives only as long
// as the test, or the cluster kit's test cluster, that made it.
package testpki

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// CA is a certificate authority that signs leaf certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Leaf is a certificate with its key and the chain up to (not including)
// the root.
type Leaf struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	CA   *CA
}

// Options shape one leaf certificate. The zero value is a certificate for
// 127.0.0.1 and localhost, valid from an hour ago for a day, usable by
// servers and clients alike (as a controller is both).
type Options struct {
	Subject   pkix.Name
	DNSNames  []string
	IPs       []net.IP
	NotBefore time.Time
	NotAfter  time.Time
}

// nextSerial draws a random serial, as a CA must not repeat one.
func nextSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(fmt.Sprintf("testpki: crypto/rand failed: %v", err))
	}
	return n
}

// NewCA makes a self-signed root named cn, valid for a day.
func NewCA(cn string) (*CA, error) { return NewCAValidFor(cn, 24*time.Hour) }

// NewCAValidFor makes a self-signed root named cn, valid from an hour ago
// for lifetime (the cluster kit keeps its CA with a cluster's directory).
func NewCAValidFor(cn string, lifetime time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn, Organization: []string{"kraftd test"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(lifetime),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Issue signs a new leaf certificate.
func (ca *CA) Issue(o Options) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if o.Subject.CommonName == "" && len(o.Subject.Names) == 0 {
		o.Subject.CommonName = "localhost"
	}
	if o.DNSNames == nil && o.IPs == nil {
		o.DNSNames, o.IPs = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: o.Subject, DNSNames: o.DNSNames, IPAddresses: o.IPs,
		NotBefore: o.NotBefore, NotAfter: o.NotAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Leaf{Cert: cert, Key: key, CA: ca}, nil
}

// CertPEM is the CA's certificate in PEM.
func (ca *CA) CertPEM() []byte { return certPEM(ca.Cert) }

// KeyPEM is the leaf's key as unencrypted PKCS#8 PEM (what Apache's PEM
// keystore reads).
func (l *Leaf) KeyPEM() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		panic(fmt.Sprintf("testpki: an ECDSA key always marshals: %v", err))
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// EncryptedKeyPEM is the leaf's key as an ENCRYPTED PRIVATE KEY (PKCS#8,
// PBES2 with PBKDF2-HMAC-SHA256 and AES-256-CBC, as OpenSSL 3 writes it)
// under password.
func (l *Leaf) EncryptedKeyPEM(password string) ([]byte, error) {
	plain, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		return nil, err
	}
	salt, iv := make([]byte, 16), make([]byte, aes.BlockSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	if _, err := rand.Read(iv); err != nil {
		return nil, err
	}
	const iterations = 2048
	key, err := pbkdf2.Key(sha256.New, password, salt, iterations, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	data := append(plain, bytes.Repeat([]byte{byte(pad)}, pad)...)
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(data, data)
	type algID struct {
		Algorithm  asn1.ObjectIdentifier
		Parameters any `asn1:"optional"`
	}
	type kdfParams struct {
		Salt       []byte
		Iterations int
		PRF        algID
	}
	type pbes2 struct{ KDF, Cipher algID }
	info := struct {
		Algorithm algID
		Data      []byte
	}{
		Algorithm: algID{asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}, pbes2{
			KDF: algID{asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}, kdfParams{salt, iterations,
				algID{asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}, asn1.NullRawValue}}},
			Cipher: algID{asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}, iv},
		}},
		Data: data,
	}
	der, err := asn1.Marshal(info)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}), nil
}

// ChainPEM is the leaf's certificate followed by its CA's.
func (l *Leaf) ChainPEM() []byte { return append(certPEM(l.Cert), certPEM(l.CA.Cert)...) }

// KeystorePEM is a PEM keystore file: the key, then the chain.
func (l *Leaf) KeystorePEM() []byte { return append(l.KeyPEM(), l.ChainPEM()...) }

// KeystorePKCS12 is a PKCS12 keystore holding the key and chain under
// password, in the modern encoding (PBES2 with AES, as Java 17+ writes).
func (l *Leaf) KeystorePKCS12(password string) ([]byte, error) {
	return pkcs12.Modern.Encode(l.Key, l.Cert, []*x509.Certificate{l.CA.Cert}, password)
}

// TruststorePKCS12 is a PKCS12 truststore holding the CA's certificate.
func (ca *CA) TruststorePKCS12(password string) ([]byte, error) {
	return pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
}

// Files are the paths WriteFiles writes into a directory.
type Files struct {
	KeystorePEM, TruststorePEM, KeystoreP12, TruststoreP12 string
}

// P12Password is the password of the PKCS12 files WriteFiles writes.
const P12Password = "test-only-password"

// WriteFiles writes the leaf's keystores and its CA's truststores, in PEM
// and PKCS12, into dir under names starting with name.
func (l *Leaf) WriteFiles(dir, name string) (Files, error) {
	f := Files{
		KeystorePEM: filepath.Join(dir, name+".keystore.pem"), TruststorePEM: filepath.Join(dir, name+".truststore.pem"),
		KeystoreP12: filepath.Join(dir, name+".keystore.p12"), TruststoreP12: filepath.Join(dir, name+".truststore.p12"),
	}
	ks, err := l.KeystorePKCS12(P12Password)
	if err != nil {
		return f, err
	}
	ts, err := l.CA.TruststorePKCS12(P12Password)
	if err != nil {
		return f, err
	}
	for path, data := range map[string][]byte{f.KeystorePEM: l.KeystorePEM(), f.TruststorePEM: l.CA.CertPEM(), f.KeystoreP12: ks, f.TruststoreP12: ts} {
		if err := WriteAtomic(path, data); err != nil {
			return f, err
		}
	}
	return f, nil
}

// WriteAtomic replaces path with data through a rename, as an operator's
// tooling rotating a certificate would, so a reader sees old or new whole.
func WriteAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
