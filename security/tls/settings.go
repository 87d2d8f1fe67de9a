package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// TLSSettings are one SSL listener's ssl.* keys, each read from
// listener.name.<listener>.<key> when set there, else from <key>, as
// Apache resolves them. Key names the setting's key as the operator wrote
// it, so an error can point at the line to fix.
type TLSSettings struct {
	Listener string

	Keystore   StoreSettings
	Truststore StoreSettings
	// KeyPassword is ssl.key.password (PEM: the key's; PKCS12: must equal
	// the store's, as keytool writes PKCS12).
	KeyPassword Secret

	ClientAuth     tls.ClientAuthType
	MinVersion     uint16
	MaxVersion     uint16
	CipherSuites   []uint16 // nil: Go's defaults
	VerifyHostname bool     // ssl.endpoint.identification.algorithm=https
	Principals     *PrincipalMapper
	// A replaced keystore whose certificate names another subject (or
	// other SANs) is refused unless these allow it, as Apache refuses such
	// a keystore on reconfiguration.
	AllowDNChanges  bool
	AllowSANChanges bool

	keys map[string]string // setting -> the key it was read from
}

// StoreSettings describe a keystore or truststore: a file (Location) or
// inline PEM (Inline: ssl.keystore.certificate.chain + ssl.keystore.key,
// or ssl.truststore.certificates).
type StoreSettings struct {
	Type      string // PKCS12, PEM, or JKS (a JKS-typed PKCS12 file is read as PKCS12)
	Location  string
	Password  Secret
	Inline    string // certificates (chain or trusted), PEM
	InlineKey Secret // ssl.keystore.key, PEM
}

// Secret is a password or key; String never shows it.
type Secret struct {
	Value string
	Set   bool
}

func (s Secret) String() string { return "[hidden]" }

// Configured reports whether the store was given at all.
func (s StoreSettings) Configured() bool { return s.Location != "" || s.Inline != "" }

// Key is the key setting was read from (e.g.
// listener.name.controller.ssl.keystore.location).
func (t *TLSSettings) Key(setting string) string {
	if k, ok := t.keys[setting]; ok {
		return k
	}
	return setting
}

// tlsKeys are the ssl.* keys kraftd honours on an SSL listener. Every other
// ssl.* key is refused (refuseSecurity), so nothing configured is ignored.
var tlsKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.client.auth", "ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites",
	"ssl.endpoint.identification.algorithm", "ssl.principal.mapping.rules",
	"ssl.allow.dn.changes", "ssl.allow.san.changes",
	// Accepted at the values that change nothing in Go (see tlsSettings).
	"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
}

// tlsSettings reads the ssl.* keys of SSL listener name.
func (p *parser) tlsSettings(name string) *TLSSettings {
	t := &TLSSettings{Listener: name, keys: map[string]string{}}
	prefix := "listener.name." + strings.ToLower(name) + "."
	get := func(setting, def string) string { return p.str(t.resolve(p, prefix, setting), def) }
	secret := func(setting string) Secret {
		key := t.resolve(p, prefix, setting)
		p.used[key] = true
		v, ok := p.props[key]
		return Secret{Value: v, Set: ok}
	}
	fail := func(key string, err error) { p.setErr(t.Key(key), err) }

	t.Keystore = StoreSettings{Type: strings.ToUpper(get("ssl.keystore.type", "JKS")), Location: get("ssl.keystore.location", ""),
		Password: secret("ssl.keystore.password"), Inline: get("ssl.keystore.certificate.chain", ""), InlineKey: secret("ssl.keystore.key")}
	t.KeyPassword = secret("ssl.key.password")
	t.Truststore = StoreSettings{Type: strings.ToUpper(get("ssl.truststore.type", "JKS")), Location: get("ssl.truststore.location", ""),
		Password: secret("ssl.truststore.password"), Inline: get("ssl.truststore.certificates", "")}
	if !t.Keystore.Configured() {
		fail("ssl.keystore.location", fmt.Errorf("an SSL listener (%s) needs a keystore: set ssl.keystore.location, "+
			"or ssl.keystore.key with ssl.keystore.certificate.chain", name))
	}
	if err := checkKeystore(t); err != nil {
		fail(err.key, err.err)
	}
	if err := checkTruststore(t); err != nil {
		fail(err.key, err.err)
	}

	switch v := strings.ToLower(get("ssl.client.auth", "none")); v {
	case "none":
		t.ClientAuth = tls.NoClientCert
	case "requested":
		t.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		t.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		// Apache falls back to none with a warning; kraftd does not run
		// more open than configured.
		fail("ssl.client.auth", fmt.Errorf("%q is none of none, requested, required", v))
	}
	tlsVersions(t, get("ssl.protocol", "TLSv1.3"), get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"), fail)
	tlsCiphers(t, get("ssl.cipher.suites", ""), fail)

	switch v := get("ssl.endpoint.identification.algorithm", "https"); strings.ToLower(v) {
	case "https":
		t.VerifyHostname = true
	case "":
	default:
		fail("ssl.endpoint.identification.algorithm", fmt.Errorf("%q: kraftd knows https (verify the peer's host name) and empty (do not)", v))
	}
	var err error
	if t.Principals, err = ParsePrincipalRules(get("ssl.principal.mapping.rules", DefaultPrincipalRules)); err != nil {
		fail("ssl.principal.mapping.rules", err)
	}
	t.AllowDNChanges = p.bool(t.resolve(p, prefix, "ssl.allow.dn.changes"), false)
	t.AllowSANChanges = p.bool(t.resolve(p, prefix, "ssl.allow.san.changes"), false)

	// Java's key and trust manager algorithms: the defaults (and SunX509,
	// the same checks for our purpose) are what crypto/tls does.
	if v := get("ssl.keymanager.algorithm", "SunX509"); !slices.Contains([]string{"sunx509", "newsunx509", "pkix"}, strings.ToLower(v)) {
		fail("ssl.keymanager.algorithm", fmt.Errorf("%q: kraftd's key manager is Go's crypto/tls (SunX509 or PKIX)", v))
	}
	if v := get("ssl.trustmanager.algorithm", "PKIX"); !slices.Contains([]string{"pkix", "sunx509"}, strings.ToLower(v)) {
		fail("ssl.trustmanager.algorithm", fmt.Errorf("%q: kraftd verifies chains with Go's crypto/x509 (PKIX)", v))
	}
	get("ssl.secure.random.implementation", "") // Go always draws from crypto/rand
	return t
}

// resolve returns the key to read setting from, for the parser's typed
// readers: the listener's override when it is set.
func (t *TLSSettings) resolve(p *parser, prefix, setting string) string {
	key := setting
	if _, ok := p.props[prefix+setting]; ok {
		key = prefix + setting
	}
	p.used[setting] = true // a top-level key shadowed here is still honoured: it is this listener's default
	t.keys[setting] = key
	return key
}

type keyError struct {
	key string
	err error
}

// checkKeystore applies Apache's rules on which keystore keys go together.
func checkKeystore(t *TLSSettings) *keyError {
	ks := &t.Keystore
	switch {
	case ks.InlineKey.Set && ks.Type != "PEM":
		return &keyError{"ssl.keystore.key", fmt.Errorf("is PEM, but ssl.keystore.type is %s", ks.Type)}
	case ks.InlineKey.Set && ks.Inline == "":
		return &keyError{"ssl.keystore.key", errors.New("is set without ssl.keystore.certificate.chain")}
	case ks.Inline != "" && !ks.InlineKey.Set:
		return &keyError{"ssl.keystore.certificate.chain", errors.New("is set without ssl.keystore.key")}
	case ks.Inline != "" && ks.Location != "":
		return &keyError{"ssl.keystore.location", errors.New("is set together with the inline ssl.keystore.key; use one")}
	case ks.Type == "PEM" && ks.Password.Set:
		return &keyError{"ssl.keystore.password", errors.New("cannot be set for a PEM keystore; only ssl.key.password (for an encrypted key) can")}
	case ks.Type != "PEM" && ks.Location == "" && ks.Password.Set:
		return &keyError{"ssl.keystore.password", errors.New("is set, but ssl.keystore.location is not")}
	case ks.Type != "PEM" && ks.Location != "" && !ks.Password.Set:
		return &keyError{"ssl.keystore.password", errors.New("is required with ssl.keystore.location")}
	case !slices.Contains([]string{"PKCS12", "PEM", "JKS"}, ks.Type):
		return &keyError{"ssl.keystore.type", fmt.Errorf("%s: kraftd reads PKCS12 and PEM keystores", ks.Type)}
	}
	return nil
}

func checkTruststore(t *TLSSettings) *keyError {
	ts := &t.Truststore
	switch {
	case ts.Inline != "" && ts.Type != "PEM":
		return &keyError{"ssl.truststore.certificates", fmt.Errorf("is PEM, but ssl.truststore.type is %s", ts.Type)}
	case ts.Inline != "" && ts.Location != "":
		return &keyError{"ssl.truststore.location", errors.New("is set together with ssl.truststore.certificates; use one")}
	case ts.Type == "PEM" && ts.Password.Set:
		return &keyError{"ssl.truststore.password", errors.New("cannot be set for a PEM truststore")}
	case ts.Location == "" && ts.Password.Set:
		return &keyError{"ssl.truststore.password", errors.New("is set, but ssl.truststore.location is not")}
	case !slices.Contains([]string{"PKCS12", "PEM", "JKS"}, ts.Type):
		return &keyError{"ssl.truststore.type", fmt.Errorf("%s: kraftd reads PKCS12 and PEM truststores", ts.Type)}
	}
	return nil
}

var tlsVersionNames = map[string]uint16{
	"TLSV1": tls.VersionTLS10, "TLSV1.1": tls.VersionTLS11, "TLSV1.2": tls.VersionTLS12, "TLSV1.3": tls.VersionTLS13,
}

// tlsVersions reads ssl.enabled.protocols into a version range (Go enables
// a range, so a set with a gap is refused). ssl.protocol picks Java's
// SSLContext, which only narrows anything when ssl.enabled.protocols is
// empty: then TLSv1.2 means at most 1.2, as Java's context does.
func tlsVersions(t *TLSSettings, protocol, enabled string, fail func(string, error)) {
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

// tlsCiphers reads ssl.cipher.suites (IANA names, as Java and Go both
// spell them). Go configures only TLS 1.2-and-older suites; its three TLS
// 1.3 suites are always on. So a list naming no TLS 1.3 suite turns TLS
// 1.3 off (as such a list does in Java), and a list naming only some of
// them is refused rather than served wider than written.
func tlsCiphers(t *TLSSettings, list string, fail func(string, error)) {
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
