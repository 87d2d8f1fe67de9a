package server

import (
	"errors"
	"strings"
	"testing"
)

// securityRefused are keys that ask for more security than kraftd gives,
// each with a value an Apache controller's file might hold.
var securityRefused = map[string]string{
	"super.users":                                      "User:admin",
	"allow.everyone.if.no.acl.found":                   "false",
	"ssl.keystore.location":                            "/etc/kafka/controller.keystore.jks",
	"ssl.keystore.password":                            "secret-password",
	"ssl.client.auth":                                  "required",
	"sasl.enabled.mechanisms":                          "SCRAM-SHA-512",
	"sasl.mechanism.controller.protocol":               "SCRAM-SHA-256",
	"listener.name.controller.ssl.keystore.location":   "/etc/kafka/controller.keystore.jks",
	"listener.name.controller.ssl.client.auth":         "requested",
	"listener.name.controller.sasl.enabled.mechanisms": "SCRAM-SHA-256",
	"listener.name.controller.plain.sasl.jaas.config":  "org.apache.kafka.common.security.plain.PlainLoginModule required;",
	"security.inter.broker.protocol":                   "SASL_SSL",
	"principal.builder.class":                          "com.example.CustomPrincipalBuilder",
}

func TestParseConfigRefusesSecurityKeys(t *testing.T) {
	for key, value := range securityRefused {
		p := baseProps()
		p[key] = value
		_, err := ParseConfig(p)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("%s=%s: %v", key, value, err)
			continue
		}
		if strings.Contains(err.Error(), value) {
			t.Errorf("%s: the message repeats the value, which may be a secret: %v", key, err)
		}
	}
}

// Values that ask for nothing beyond plaintext pass, as unused keys.
func TestParseConfigPassesPlaintextSecurityValues(t *testing.T) {
	for key, value := range map[string]string{
		"allow.everyone.if.no.acl.found":           "true",
		"ssl.client.auth":                          "none",
		"listener.name.controller.ssl.client.auth": "NONE",
		"security.inter.broker.protocol":           "PLAINTEXT",
		"principal.builder.class":                  defaultPrincipalBuilder,
		"super.users":                              "",
		"ssl.endpoint.identification.algorithm":    "",
	} {
		p := baseProps()
		p[key] = value
		c, err := ParseConfig(p)
		if err != nil {
			t.Errorf("%s=%s: %v", key, value, err)
			continue
		}
		if !strings.Contains(strings.Join(c.Unknown, ","), key) {
			t.Errorf("%s=%s passed but is not reported unused: %v", key, value, c.Unknown)
		}
	}
}
