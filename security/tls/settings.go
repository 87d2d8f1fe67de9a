package kraftdtls

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kraftd/kraftd/security"
)

// Settings are one SSL listener's ssl.* keys, each read from
// listener.name.<listener>.<key> when set there, else from <key>, as
// Apache resolves them (the node's configuration parser reads them). Key
// names the setting's key as the operator wrote it, so an error can point
// at the line to fix.
type Settings struct {
	Listener string

	Keystore   StoreSettings
	Truststore StoreSettings
	// KeyPassword is ssl.key.password (PEM: the key's; PKCS12: must equal
	// the store's, as keytool writes PKCS12).
	KeyPassword security.Secret

	ClientAuth     tls.ClientAuthType
	MinVersion     uint16
	MaxVersion     uint16
	CipherSuites   []uint16 // nil: Go's defaults
	VerifyHostname bool     // ssl.endpoint.identification.algorithm=https
	Principals     *security.PrincipalMapper
	// A replaced keystore whose certificate names another subject (or
	// other SANs) is refused unless these allow it, as Apache refuses such
	// a keystore on reconfiguration.
	AllowDNChanges  bool
	AllowSANChanges bool

	keys map[string]string // setting -> the key it was read from (ReadFrom)
}

// StoreSettings describe a keystore or truststore: a file (Location) or
// inline PEM (Inline: ssl.keystore.certificate.chain + ssl.keystore.key,
// or ssl.truststore.certificates).
type StoreSettings struct {
	Type      string // PKCS12, PEM, or JKS (a JKS-typed PKCS12 file is read as PKCS12)
	Location  string
	Password  security.Secret
	Inline    string          // certificates (chain or trusted), PEM
	InlineKey security.Secret // ssl.keystore.key, PEM
}

// Configured reports whether the store was given at all.
func (s StoreSettings) Configured() bool { return s.Location != "" || s.Inline != "" }

// Key is the key setting was read from (e.g.
// listener.name.controller.ssl.keystore.location).
func (t *Settings) Key(setting string) string {
	if k, ok := t.keys[setting]; ok {
		return k
	}
	return setting
}

// ReadFrom records that setting was read from key (a listener's
// override), for Key.
func (t *Settings) ReadFrom(setting, key string) {
	if t.keys == nil {
		t.keys = map[string]string{}
	}
	t.keys[setting] = key
}

// HonouredKeys are the ssl.* keys kraftd honours on an SSL listener. The
// node's configuration refuses every other ssl.* key, so nothing
// configured is ignored.
var HonouredKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.client.auth", "ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites",
	"ssl.endpoint.identification.algorithm", "ssl.principal.mapping.rules",
	"ssl.allow.dn.changes", "ssl.allow.san.changes",
	// Accepted at the values that change nothing in Go.
	"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
}

// CheckKeystore applies Apache's rules on which keystore keys go together.
// The error's Key is the setting, not yet resolved by Key.
func CheckKeystore(t *Settings) *security.KeyError {
	ks := &t.Keystore
	switch {
	case ks.InlineKey.Set && ks.Type != "PEM":
		return &security.KeyError{Key: "ssl.keystore.key", Err: fmt.Errorf("is PEM, but ssl.keystore.type is %s", ks.Type)}
	case ks.InlineKey.Set && ks.Inline == "":
		return &security.KeyError{Key: "ssl.keystore.key", Err: errors.New("is set without ssl.keystore.certificate.chain")}
	case ks.Inline != "" && !ks.InlineKey.Set:
		return &security.KeyError{Key: "ssl.keystore.certificate.chain", Err: errors.New("is set without ssl.keystore.key")}
	case ks.Inline != "" && ks.Location != "":
		return &security.KeyError{Key: "ssl.keystore.location", Err: errors.New("is set together with the inline ssl.keystore.key; use one")}
	case ks.Type == "PEM" && ks.Password.Set:
		return &security.KeyError{Key: "ssl.keystore.password", Err: errors.New("cannot be set for a PEM keystore; only ssl.key.password (for an encrypted key) can")}
	case ks.Type != "PEM" && ks.Location == "" && ks.Password.Set:
		return &security.KeyError{Key: "ssl.keystore.password", Err: errors.New("is set, but ssl.keystore.location is not")}
	case ks.Type != "PEM" && ks.Location != "" && !ks.Password.Set:
		return &security.KeyError{Key: "ssl.keystore.password", Err: errors.New("is required with ssl.keystore.location")}
	case !slices.Contains([]string{"PKCS12", "PEM", "JKS"}, ks.Type):
		return &security.KeyError{Key: "ssl.keystore.type", Err: fmt.Errorf("%s: kraftd reads PKCS12 and PEM keystores", ks.Type)}
	}
	return nil
}

// CheckTruststore is CheckKeystore for the truststore keys.
func CheckTruststore(t *Settings) *security.KeyError {
	ts := &t.Truststore
	switch {
	case ts.Inline != "" && ts.Type != "PEM":
		return &security.KeyError{Key: "ssl.truststore.certificates", Err: fmt.Errorf("is PEM, but ssl.truststore.type is %s", ts.Type)}
	case ts.Inline != "" && ts.Location != "":
		return &security.KeyError{Key: "ssl.truststore.location", Err: errors.New("is set together with ssl.truststore.certificates; use one")}
	case ts.Type == "PEM" && ts.Password.Set:
		return &security.KeyError{Key: "ssl.truststore.password", Err: errors.New("cannot be set for a PEM truststore")}
	case ts.Location == "" && ts.Password.Set:
		return &security.KeyError{Key: "ssl.truststore.password", Err: errors.New("is set, but ssl.truststore.location is not")}
	case !slices.Contains([]string{"PKCS12", "PEM", "JKS"}, ts.Type):
		return &security.KeyError{Key: "ssl.truststore.type", Err: fmt.Errorf("%s: kraftd reads PKCS12 and PEM truststores", ts.Type)}
	}
	return nil
}

var tlsVersionNames = map[string]uint16{
	"TLSV1": tls.VersionTLS10, "TLSV1.1": tls.VersionTLS11, "TLSV1.2": tls.VersionTLS12, "TLSV1.3": tls.VersionTLS13,
}

// Versions reads ssl.enabled.protocols into a version range (Go enables
// a range, so a set with a gap is refused). ssl.protocol picks Java's
// SSLContext, which only narrows anything when ssl.enabled.protocols is
// empty: then TLSv1.2 means at most 1.2, as Java's context does.
func Versions(t *Settings, protocol, enabled string, fail func(string, error)) {
	top := uint16(tls.VersionTLS13)
	switch up := strings.ToUpper(protocol); {
	case up == "TLS" || up == "TLSV1.3":
	case tlsVersionNames[up] != 0:
		top = tlsVersionNames[up]
	default:
		fail("ssl.protocol", fmt.Errorf("%q: kraftd knows TLS, TLSv1, TLSv1.1, TLSv1.2 and TLSv1.3", protocol))
		return
	}
	var versions []uint16
	for _, s := range strings.Split(enabled, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		v, ok := tlsVersionNames[strings.ToUpper(s)]
		if !ok {
			fail("ssl.enabled.protocols", fmt.Errorf("%q: kraftd knows TLSv1, TLSv1.1, TLSv1.2 and TLSv1.3", s))
			return
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		t.MinVersion, t.MaxVersion = tls.VersionTLS12, top
		return
	}
	slices.Sort(versions)
	versions = slices.Compact(versions)
	if int(versions[len(versions)-1]-versions[0]) != len(versions)-1 {
		fail("ssl.enabled.protocols", errors.New("has a gap between its versions; Go's TLS enables a contiguous range"))
		return
	}
	t.MinVersion, t.MaxVersion = versions[0], versions[len(versions)-1]
}

// Ciphers reads ssl.cipher.suites (IANA names, as Java and Go both
// spell them). Go configures only TLS 1.2-and-older suites; its three TLS
// 1.3 suites are always on. So a list naming no TLS 1.3 suite turns TLS
// 1.3 off (as such a list does in Java), and a list naming only some of
// them is refused rather than served wider than written.
func Ciphers(t *Settings, list string, fail func(string, error)) {
	if strings.TrimSpace(list) == "" {
		return
	}
	known := map[string]*tls.CipherSuite{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[cs.Name] = cs
	}
	tls13 := 0
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		cs, ok := known[s]
		if !ok {
			fail("ssl.cipher.suites", fmt.Errorf("%q is no cipher suite Go's TLS implements", s))
			return
		}
		if slices.Contains(cs.SupportedVersions, tls.VersionTLS13) {
			tls13++
			continue
		}
		t.CipherSuites = append(t.CipherSuites, cs.ID)
	}
	switch {
	case tls13 == 0 && t.MaxVersion == tls.VersionTLS13:
		t.MaxVersion = tls.VersionTLS12
		if t.MinVersion > t.MaxVersion {
			fail("ssl.cipher.suites", errors.New("names no TLS 1.3 suite, but ssl.enabled.protocols enables only TLSv1.3"))
		}
	case tls13 > 0 && tls13 < 3:
		fail("ssl.cipher.suites", errors.New("names some TLS 1.3 suites but not all three; Go's TLS 1.3 always offers "+
			"TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 and TLS_CHACHA20_POLY1305_SHA256"))
	}
	if len(t.CipherSuites) == 0 && t.MinVersion < tls.VersionTLS13 && tls13 > 0 {
		// Only TLS 1.3 suites listed: older versions would have none.
		t.MinVersion = tls.VersionTLS13
		if t.MaxVersion < tls.VersionTLS13 {
			fail("ssl.cipher.suites", errors.New("names only TLS 1.3 suites, but ssl.enabled.protocols does not enable TLSv1.3"))
		}
	}
}
