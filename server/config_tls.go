package server

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/kraftd/kraftd/security"
	kraftdtls "github.com/kraftd/kraftd/security/tls"
)

// The ssl.* keys of SSL listeners are read here into the settings package
// kraftdtls takes; what they mean (stores, versions, suites) is its.

// tlsSettings reads the ssl.* keys of SSL listener name.
func (p *parser) tlsSettings(name string) *kraftdtls.Settings {
	t := &kraftdtls.Settings{Listener: name}
	prefix := "listener.name." + strings.ToLower(name) + "."
	get := func(setting, def string) string { return p.str(p.resolve(t, prefix, setting), def) }
	secret := func(setting string) security.Secret {
		key := p.resolve(t, prefix, setting)
		p.used[key] = true
		v, ok := p.props[key]
		return security.Secret{Value: v, Set: ok}
	}
	fail := func(key string, err error) { p.setErr(t.Key(key), err) }

	t.Keystore = kraftdtls.StoreSettings{Type: strings.ToUpper(get("ssl.keystore.type", "JKS")), Location: get("ssl.keystore.location", ""),
		Password: secret("ssl.keystore.password"), Inline: get("ssl.keystore.certificate.chain", ""), InlineKey: secret("ssl.keystore.key")}
	t.KeyPassword = secret("ssl.key.password")
	t.Truststore = kraftdtls.StoreSettings{Type: strings.ToUpper(get("ssl.truststore.type", "JKS")), Location: get("ssl.truststore.location", ""),
		Password: secret("ssl.truststore.password"), Inline: get("ssl.truststore.certificates", "")}
	if !t.Keystore.Configured() {
		fail("ssl.keystore.location", fmt.Errorf("an SSL listener (%s) needs a keystore: set ssl.keystore.location, "+
			"or ssl.keystore.key with ssl.keystore.certificate.chain", name))
	}
	if err := kraftdtls.CheckKeystore(t); err != nil {
		fail(err.Key, err.Err)
	}
	if err := kraftdtls.CheckTruststore(t); err != nil {
		fail(err.Key, err.Err)
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
	kraftdtls.Versions(t, get("ssl.protocol", "TLSv1.3"), get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"), fail)
	kraftdtls.Ciphers(t, get("ssl.cipher.suites", ""), fail)

	switch v := get("ssl.endpoint.identification.algorithm", "https"); strings.ToLower(v) {
	case "https":
		t.VerifyHostname = true
	case "":
	default:
		fail("ssl.endpoint.identification.algorithm", fmt.Errorf("%q: kraftd knows https (verify the peer's host name) and empty (do not)", v))
	}
	var err error
	if t.Principals, err = security.ParsePrincipalRules(get("ssl.principal.mapping.rules", security.DefaultPrincipalRules)); err != nil {
		fail("ssl.principal.mapping.rules", err)
	}
	t.AllowDNChanges = p.bool(p.resolve(t, prefix, "ssl.allow.dn.changes"), false)
	t.AllowSANChanges = p.bool(p.resolve(t, prefix, "ssl.allow.san.changes"), false)

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

// resolve returns the key to read setting of t from, for the parser's
// typed readers: the listener's override when it is set.
func (p *parser) resolve(t *kraftdtls.Settings, prefix, setting string) string {
	key := setting
	if _, ok := p.props[prefix+setting]; ok {
		key = prefix + setting
	}
	p.used[setting] = true // a top-level key shadowed here is still honoured: it is this listener's default
	t.ReadFrom(setting, key)
	return key
}
