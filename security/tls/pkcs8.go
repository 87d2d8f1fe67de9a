package kraftdtls

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// An ENCRYPTED PRIVATE KEY (PKCS#8 EncryptedPrivateKeyInfo, RFC 5958) is
// what Apache's PEM keystore decrypts with ssl.key.password. kraftd reads
// the scheme OpenSSL 3 and Java write by default, PBES2 (RFC 8018) with
// PBKDF2 and AES-CBC, using only the standard library's primitives; the
// legacy PBES1 schemes (DES, RC2, RC4) are refused by name.

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

type algorithmIdentifier struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type encryptedPrivateKeyInfo struct {
	Algorithm     algorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc algorithmIdentifier
	EncryptionScheme  algorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                 `asn1:"optional"`
	PRF            algorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a key file can ask of start-up
// (OpenSSL writes 2048, Java 10000). A variable: the fuzz test lowers it.
var maxPBKDF2Iterations = 1_000_000

// decryptPKCS8 returns the PKCS#8 PrivateKeyInfo inside an encrypted key.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("the ENCRYPTED PRIVATE KEY does not decode")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("the key is encrypted with %v; kraftd reads PBES2 (PBKDF2 with AES-CBC), "+
			"what `openssl pkcs8 -topk8 -v2 aes256` writes", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, errors.New("the key's PBES2 parameters do not decode")
	}
	block, err := pbes2Cipher(params, password)
	if err != nil {
		return nil, err
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("the key's AES-CBC IV does not decode")
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, errors.New("the encrypted key is not whole AES blocks")
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	n := int(plain[len(plain)-1])
	if n == 0 || n > aes.BlockSize || !bytes.Equal(plain[len(plain)-n:], bytes.Repeat([]byte{byte(n)}, n)) {
		return nil, errors.New("the key does not decrypt: is ssl.key.password right?")
	}
	return plain[:len(plain)-n], nil
}

// pbes2Cipher derives the AES key PBES2's PBKDF2 parameters name.
func pbes2Cipher(params pbes2Params, password string) (cipher.Block, error) {
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("the key's PBES2 uses key derivation %v; kraftd reads PBKDF2", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, errors.New("the key's PBKDF2 parameters do not decode")
	}
	if kdf.IterationCount < 1 || kdf.IterationCount > maxPBKDF2Iterations {
		return nil, fmt.Errorf("the key's PBKDF2 iteration count %d is outside 1..%d", kdf.IterationCount, maxPBKDF2Iterations)
	}
	prf := map[string]func() hash.Hash{
		oidHMACSHA1.String(): sha1.New, oidHMACSHA224.String(): sha256.New224, oidHMACSHA256.String(): sha256.New,
		oidHMACSHA384.String(): sha512.New384, oidHMACSHA512.String(): sha512.New,
	}
	h := sha1.New // RFC 8018's default PRF
	if kdf.PRF.Algorithm != nil {
		var ok bool
		if h, ok = prf[kdf.PRF.Algorithm.String()]; !ok {
			return nil, fmt.Errorf("the key's PBKDF2 uses PRF %v, which kraftd does not know", kdf.PRF.Algorithm)
		}
	}
	sizes := map[string]int{oidAES128CBC.String(): 16, oidAES192CBC.String(): 24, oidAES256CBC.String(): 32}
	size, ok := sizes[params.EncryptionScheme.Algorithm.String()]
	if !ok {
		return nil, fmt.Errorf("the key is encrypted with %v; kraftd reads AES-CBC", params.EncryptionScheme.Algorithm)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != size {
		return nil, errors.New("the key's PBKDF2 key length does not fit its AES cipher")
	}
	key, err := pbkdf2.Key(h, password, kdf.Salt, kdf.IterationCount, size)
	if err != nil {
		return nil, err
	}
	return aes.NewCipher(key)
}
