package main

import (
	"strings"
	"testing"
)

// Every setting that asks for more security than kraftd gives stops
// start-up with exit code 2 and names the key; it never runs open.
func TestStartRefusesSecurityKeys(t *testing.T) {
	bin := kraftdBinary(t)
	for _, kv := range []string{
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
		"allow.everyone.if.no.acl.found=false",
		"super.users=User:admin",
		"ssl.keystore.location=/etc/kafka/controller.keystore.jks",
		"ssl.truststore.password=secret",
		"ssl.client.auth=required",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"sasl.mechanism.controller.protocol=SCRAM-SHA-512",
		"listener.name.controller.ssl.keystore.location=/etc/kafka/controller.keystore.jks",
		"listener.name.controller.ssl.client.auth=required",
		"listener.name.controller.sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.controller.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"security.inter.broker.protocol=SSL",
		"principal.builder.class=com.example.PrincipalBuilder",
	} {
		key, _, _ := strings.Cut(kv, "=")
		conf := writeConfig(t, "controller.quorum.voters=1@127.0.0.1:9093\n"+kv+"\n")
		out, code := run(t, bin, "start", "--config", conf)
		if code != 2 || !strings.Contains(out, "config "+key+":") {
			t.Errorf("%s: exit %d: %s", kv, code, out)
		}
	}
	// A value that asks for nothing beyond plaintext passes the
	// configuration (and here stops at the unformatted directory).
	for _, kv := range []string{"allow.everyone.if.no.acl.found=true", "ssl.client.auth=none", "security.inter.broker.protocol=PLAINTEXT"} {
		conf := writeConfig(t, "controller.quorum.voters=1@127.0.0.1:9093\n"+kv+"\n")
		if out, code := run(t, bin, "start", "--config", conf); code != 1 || !strings.Contains(out, "not formatted") {
			t.Errorf("%s: exit %d: %s", kv, code, out)
		}
	}
}

// An SSL listener whose store does not load stops start-up with exit 2
// naming the key, before the directory is even looked at; SASL listeners
// without a served mechanism, and keys kraftd does not honour, stay
// refused.
func TestStartRefusesUnloadableTLS(t *testing.T) {
	bin := kraftdBinary(t)
	ssl := "controller.quorum.voters=1@127.0.0.1:9093\nlistener.security.protocol.map=CONTROLLER:SSL\n"
	for key, extra := range map[string]string{
		"listener.name.controller.ssl.keystore.location": "ssl.keystore.type=PEM\nlistener.name.controller.ssl.keystore.location=/nonexistent/ks.pem\n",
		"ssl.keystore.location":                          "ssl.truststore.type=PEM\n",
		"ssl.provider":                                   "ssl.keystore.type=PEM\nssl.keystore.location=/nonexistent/ks.pem\nssl.provider=BC\n",
	} {
		out, code := run(t, bin, "start", "--config", writeConfig(t, ssl+extra))
		if code != 2 || !strings.Contains(out, "config "+key+":") {
			t.Errorf("%s: exit %d: %s", key, code, out)
		}
	}
	out, code := run(t, bin, "start", "--config", writeConfig(t, "controller.quorum.voters=1@127.0.0.1:9093\nlistener.security.protocol.map=CONTROLLER:SASL_SSL\n"))
	if code != 2 || !strings.Contains(out, "config sasl.enabled.mechanisms:") {
		t.Errorf("SASL_SSL without mechanisms: exit %d: %s", code, out)
	}
	// SASL_PLAINTEXT with no mechanism would get Apache's GSSAPI, which
	// kraftd does not serve.
	out, code = run(t, bin, "start", "--config", writeConfig(t, "controller.quorum.voters=1@127.0.0.1:9093\nlistener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT\n"))
	if code != 2 || !strings.Contains(out, "config sasl.enabled.mechanisms:") {
		t.Errorf("SASL_PLAINTEXT without mechanisms: exit %d: %s", code, out)
	}
}
