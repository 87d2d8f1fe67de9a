package server

import (
	"errors"
	"testing"

	"github.com/kraftd/kraftd/internal/testpki"
)

// TestParseClientSecurity reads Apache client properties as `kraftd status
// --command-config` does: each protocol gets what it needs, and a key
// kraftd cannot honour is refused by name.
func TestParseClientSecurity(t *testing.T) {
	k := newPKI(t)
	plainJAAS := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="secret";`
	scramJAAS := `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="secret";`

	cs, err := ParseClientSecurity(map[string]string{})
	if err != nil || cs.Protocol != "PLAINTEXT" || cs.TLS != nil || cs.SASL != nil {
		t.Fatalf("no properties: %+v %v", cs, err)
	}
	cs, err = ParseClientSecurity(map[string]string{"security.protocol": "SSL",
		"ssl.truststore.type": "PKCS12", "ssl.truststore.location": k.files.TruststoreP12, "ssl.truststore.password": testpki.P12Password,
		"ssl.keystore.type": "PEM", "ssl.keystore.location": k.files.KeystorePEM})
	if err != nil || cs.TLS == nil || cs.TLS.RootCAs == nil || len(cs.TLS.Certificates) != 1 || cs.TLS.InsecureSkipVerify || cs.SASL != nil {
		t.Fatalf("SSL with a client certificate: %+v %v", cs, err)
	}
	cs, err = ParseClientSecurity(map[string]string{"security.protocol": "sasl_ssl",
		"ssl.truststore.type": "PEM", "ssl.truststore.location": k.files.TruststorePEM, "ssl.endpoint.identification.algorithm": "",
		"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": scramJAAS})
	if err != nil || cs.TLS == nil || len(cs.TLS.Certificates) != 0 || !cs.TLS.InsecureSkipVerify || cs.TLS.VerifyConnection == nil ||
		cs.SASL == nil || cs.SASL.Name() != "SCRAM-SHA-512" {
		t.Fatalf("SASL_SSL with SCRAM, no host-name check: %+v %v", cs, err)
	}
	cs, err = ParseClientSecurity(map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": plainJAAS})
	if err != nil || cs.TLS != nil || cs.SASL == nil || cs.SASL.Name() != "PLAIN" {
		t.Fatalf("SASL_PLAINTEXT with PLAIN: %+v %v", cs, err)
	}

	for name, tc := range map[string]struct {
		props map[string]string
		key   string
	}{
		"unknown protocol":     {map[string]string{"security.protocol": "TLS"}, "security.protocol"},
		"GSSAPI by default":    {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainJAAS}, "sasl.mechanism"},
		"no JAAS":              {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config"},
		"JAAS of another kind": {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": scramJAAS}, "sasl.jaas.config"},
		"JAAS without password": {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin";`}, "sasl.jaas.config"},
		"a key not read": {map[string]string{"security.protocol": "SSL", "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "ssl.cipher.suites"},
		"missing store":  {map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": k.dir + "/none.pem"}, "ssl.truststore.location"},
		"PEM with a password": {map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": k.files.TruststorePEM,
			"ssl.truststore.password": "x"}, "ssl.truststore.password"},
		"wrong store password": {map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PKCS12", "ssl.truststore.location": k.files.TruststoreP12,
			"ssl.truststore.password": "wrong"}, "ssl.truststore.location"},
		"unknown host check": {map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldap"}, "ssl.endpoint.identification.algorithm"},
	} {
		_, err := ParseClientSecurity(tc.props)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%s: %v, want an error naming %s", name, err, tc.key)
		}
	}
}
