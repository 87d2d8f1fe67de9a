package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/kraftd/kraftd/security"
	"github.com/kraftd/kraftd/security/sasl"
	kraftdtls "github.com/kraftd/kraftd/security/tls"
)

// ClientSecurity is how a Kafka client of kraftd's own (`kraftd status`)
// connects to a controller listener, read from Apache client properties
// as kafka-metadata-quorum.sh --command-config reads them:
// security.protocol, the ssl.* trust and key stores,
// ssl.endpoint.identification.algorithm, sasl.mechanism and
// sasl.jaas.config (the PLAIN or SCRAM login module's username and
// password).
type ClientSecurity struct {
	// Protocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	Protocol string
	// TLS is nil unless Protocol is SSL or SASL_SSL. Its ServerName is
	// empty: the client sets it to the host it dials.
	TLS *tls.Config
	// SASL is nil unless Protocol is SASL_PLAINTEXT or SASL_SSL.
	SASL kgosasl.Mechanism
}

// clientKeys are the client properties ParseClientSecurity honours; any
// other security key is refused, so that nothing asked for is ignored.
var clientKeys = []string{
	"security.protocol", "sasl.mechanism", "sasl.jaas.config",
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.endpoint.identification.algorithm", "ssl.enabled.protocols", "ssl.protocol",
}

// ParseClientSecurity reads client properties. An error names the key to
// fix (a *ConfigError).
func ParseClientSecurity(props map[string]string) (*ClientSecurity, error) {
	p := &parser{props: props, used: map[string]bool{}}
	for key := range props {
		if (strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl.")) && !slices.Contains(clientKeys, key) {
			return nil, p.fail(key, errors.New("is not read by kraftd's client; it reads "+strings.Join(clientKeys, ", ")))
		}
	}
	cs := &ClientSecurity{Protocol: strings.ToUpper(p.str("security.protocol", "PLAINTEXT"))}
	switch cs.Protocol {
	case "PLAINTEXT":
	case "SSL", "SASL_SSL":
		c, err := clientTLS(p)
		if err != nil {
			return nil, err
		}
		cs.TLS = c
	case "SASL_PLAINTEXT":
	default:
		return nil, p.fail("security.protocol", fmt.Errorf("%q is none of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", cs.Protocol))
	}
	if strings.HasPrefix(cs.Protocol, "SASL_") {
		m, err := clientSASL(p)
		if err != nil {
			return nil, err
		}
		cs.SASL = m
	}
	return cs, nil
}

// clientTLS is the TLS of an SSL or SASL_SSL client: the truststore
// (none: the system's roots), a keystore if the listener asks for a
// client certificate, the TLS versions, and the host-name check.
func clientTLS(p *parser) (*tls.Config, error) {
	t := &kraftdtls.Settings{Listener: "client"}
	secret := func(key string) security.Secret {
		p.used[key] = true
		v, ok := p.props[key]
		return security.Secret{Value: v, Set: ok}
	}
	t.Keystore = kraftdtls.StoreSettings{Type: strings.ToUpper(p.str("ssl.keystore.type", "JKS")), Location: p.str("ssl.keystore.location", ""),
		Password: secret("ssl.keystore.password"), Inline: p.str("ssl.keystore.certificate.chain", ""), InlineKey: secret("ssl.keystore.key")}
	t.KeyPassword = secret("ssl.key.password")
	t.Truststore = kraftdtls.StoreSettings{Type: strings.ToUpper(p.str("ssl.truststore.type", "JKS")), Location: p.str("ssl.truststore.location", ""),
		Password: secret("ssl.truststore.password"), Inline: p.str("ssl.truststore.certificates", "")}
	if t.Keystore.Configured() || t.Keystore.InlineKey.Set || t.Keystore.Password.Set {
		if err := kraftdtls.CheckKeystore(t); err != nil {
			return nil, p.fail(err.Key, err.Err)
		}
	}
	if err := kraftdtls.CheckTruststore(t); err != nil {
		return nil, p.fail(err.Key, err.Err)
	}
	kraftdtls.Versions(t, p.str("ssl.protocol", "TLSv1.3"), p.str("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"), p.setErr)
	switch v := p.str("ssl.endpoint.identification.algorithm", "https"); strings.ToLower(v) {
	case "https":
		t.VerifyHostname = true
	case "":
	default:
		p.setErr("ssl.endpoint.identification.algorithm", fmt.Errorf("%q: kraftd knows https (verify the server's host name) and empty (do not)", v))
	}
	if p.err != nil {
		return nil, p.err
	}
	c, err := kraftdtls.ClientConfig(t)
	return c, keyConfigError(err)
}

// clientSASL is the mechanism of a SASL client: sasl.mechanism (Apache's
// default, GSSAPI, is not spoken) with the username and password of the
// sasl.jaas.config login module.
func clientSASL(p *parser) (kgosasl.Mechanism, error) {
	mech := strings.ToUpper(p.str("sasl.mechanism", "GSSAPI"))
	if !slices.Contains(sasl.Served, mech) {
		return nil, p.fail("sasl.mechanism", fmt.Errorf("is %s; kraftd's client speaks %s", mech, strings.Join(sasl.Served, ", ")))
	}
	module, err := sasl.SingleJAASModule(p.str("sasl.jaas.config", ""), sasl.LoginModule(mech))
	if err != nil {
		return nil, p.fail("sasl.jaas.config", fmt.Errorf("must hold the %s login module's username and password: %w", mech, err))
	}
	user := module.Options["username"]
	password, ok := module.Options["password"]
	if !ok || user == "" {
		return nil, p.fail("sasl.jaas.config", errors.New("has no username and password options"))
	}
	return sasl.ClientMechanism(&sasl.Client{Mechanism: mech, User: user, Password: security.Secret{Value: password, Set: true}})
}
