package compat

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// saslAddrs maps a listener address to the SASL mechanism the harness
// authenticates to it with, after TLS when UseTLS was called too; every
// helper that sends requests then authenticates first without a change.
var saslAddrs sync.Map // string -> sasl.Mechanism

// UseSASL makes the harness authenticate to addr with m until the test
// ends.
func UseSASL(t testing.TB, addr string, m sasl.Mechanism) {
	saslAddrs.Store(addr, m)
	t.Cleanup(func() { saslAddrs.Delete(addr) })
}

// authenticateConn runs SaslHandshake v1 and SaslAuthenticate v2 when addr
// was given to UseSASL.
func authenticateConn(ctx context.Context, addr string, c *Conn) error {
	v, ok := saslAddrs.Load(addr)
	if !ok {
		return nil
	}
	m := v.(sasl.Mechanism)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	resp, err := c.Request(ctx, hs)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return errorf("SaslHandshake %s with %s: %w", m.Name(), addr, kerr.ErrorForCode(code))
	}
	session, token, err := m.Authenticate(ctx, addr)
	if err != nil {
		return err
	}
	for {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = token
		r, err := c.Request(ctx, auth)
		if err != nil {
			return err
		}
		ar := r.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			return errorf("SaslAuthenticate with %s: %w", addr, kerr.ErrorForCode(ar.ErrorCode))
		}
		done, next, err := session.Challenge(ar.SASLAuthBytes)
		if err != nil || done {
			return err
		}
		token = next
	}
}

// PlainSASL is a SASL_PLAINTEXT set-up with PLAIN for every controller of
// a test, in Apache's keys, which both kraftd and Apache read: the
// controllers authenticate to each other as "controller"; the harness and
// the tools as "admin".
type PlainSASL struct {
	ControllerPassword, AdminPassword string
}

// NewPlainSASL makes passwords for one test.
func NewPlainSASL() *PlainSASL {
	return &PlainSASL{ControllerPassword: "controller-test-password", AdminPassword: "admin-test-password"}
}

// ServerProps are the controllers' server.properties entries.
func (s *PlainSASL) ServerProps() map[string]string {
	return map[string]string{
		"listener.security.protocol.map":                   "CONTROLLER:SASL_PLAINTEXT",
		"sasl.mechanism.controller.protocol":               "PLAIN",
		"listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
		"listener.name.controller.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="controller" password="` + s.ControllerPassword + `" ` +
			`user_controller="` + s.ControllerPassword + `" user_admin="` + s.AdminPassword + `";`,
	}
}

// UseFor makes the harness authenticate as admin to every address.
func (s *PlainSASL) UseFor(t testing.TB, addrs ...string) {
	for _, a := range addrs {
		UseSASL(t, a, plain.Auth{User: "admin", Pass: s.AdminPassword}.AsMechanism())
	}
}

// WriteClientProperties writes an Apache tool's --command-config for
// SASL_PLAINTEXT with PLAIN as user, password.
func (s *PlainSASL) WriteClientProperties(t testing.TB, user, password string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.properties")
	writeFile(t, path, []byte(FormatProperties(map[string]string{
		"security.protocol": "SASL_PLAINTEXT",
		"sasl.mechanism":    "PLAIN",
		"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="` + user +
			`" password="` + password + `";`,
	})))
	return path
}

// ScramSASL is a SASL_SSL set-up with SCRAM-SHA-512 on the CONTROLLER
// listener of every controller of a test, in Apache's keys: the
// credentials come from `format --add-scram` (FormatArgs); the controllers
// authenticate to each other as "controller", the harness and tools as
// "admin". With Plain set, the listener enables PLAIN too and the
// controllers authenticate to each other with PLAIN, the set-up an Apache
// controller needs (see docs/compatibility.md: Apache's controllers read
// SCRAM credentials only from the committed image, so they cannot
// authenticate each other's first votes with SCRAM).
type ScramSASL struct {
	PKI                               *TestPKI
	ControllerPassword, AdminPassword string
	Plain                             bool
}

// NewScramSASL makes a PKI and passwords for one test.
func NewScramSASL(t testing.TB) *ScramSASL {
	return &ScramSASL{PKI: NewTestPKI(t), ControllerPassword: "controller-scram-password", AdminPassword: "admin-scram-password"}
}

// scramBrokerPassword is the password of user "broker", whom Apache
// brokers authenticate to the controllers as (BrokerProps).
const scramBrokerPassword = "broker-scram-password"

// BrokerProps are an Apache broker's entries for reaching the controllers'
// SASL_SSL listener with SCRAM-SHA-512 as user "broker": the broker reads
// its own credentials from the listener's JAAS key, as a controller does.
func (s *ScramSASL) BrokerProps() map[string]string {
	return map[string]string{
		"listener.security.protocol.map":     "CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT",
		"sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
		"listener.name.controller.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required ` +
			`username="broker" password="` + scramBrokerPassword + `";`,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": s.PKI.Files.TruststorePEM,
	}
}

// FormatArgs are the --add-scram arguments of every member's format.
func (s *ScramSASL) FormatArgs() []string {
	return []string{
		"--add-scram", "SCRAM-SHA-512=[name=controller,password=" + s.ControllerPassword + "]",
		"--add-scram", "SCRAM-SHA-512=[name=admin,iterations=8192,password=" + s.AdminPassword + "]",
		"--add-scram", "SCRAM-SHA-512=[name=broker,password=" + scramBrokerPassword + "]",
	}
}

// ServerProps are the controllers' server.properties entries.
func (s *ScramSASL) ServerProps() map[string]string {
	props := s.PKI.ServerProps("none")
	props["listener.security.protocol.map"] = "CONTROLLER:SASL_SSL"
	props["sasl.mechanism.controller.protocol"] = "SCRAM-SHA-512"
	props["listener.name.controller.sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
	props["listener.name.controller.scram-sha-512.sasl.jaas.config"] = `org.apache.kafka.common.security.scram.ScramLoginModule required ` +
		`username="controller" password="` + s.ControllerPassword + `";`
	if s.Plain {
		props["sasl.mechanism.controller.protocol"] = "PLAIN"
		props["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-512"
		props["listener.name.controller.plain.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="controller" password="` + s.ControllerPassword + `" user_controller="` + s.ControllerPassword + `";`
	}
	return props
}

// UseFor makes the harness reach every address over TLS and authenticate
// as admin with SCRAM-SHA-512.
func (s *ScramSASL) UseFor(t testing.TB, addrs ...string) {
	s.PKI.UseFor(t, addrs...)
	for _, a := range addrs {
		UseSASL(t, a, scram.Auth{User: "admin", Pass: s.AdminPassword}.AsSha512Mechanism())
	}
}

// WriteClientProperties writes an Apache client's SASL_SSL properties
// for SCRAM-SHA-512 as user, password (a tool's --command-config, or a
// broker's controller-listener keys with a prefix added by the caller).
func (s *ScramSASL) WriteClientProperties(t testing.TB, user, password string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.properties")
	writeFile(t, path, []byte(FormatProperties(s.ClientProps(user, password))))
	return path
}

// ClientProps are an Apache client's SASL_SSL entries for SCRAM-SHA-512.
func (s *ScramSASL) ClientProps(user, password string) map[string]string {
	return map[string]string{
		"security.protocol":   "SASL_SSL",
		"ssl.truststore.type": "PEM", "ssl.truststore.location": s.PKI.Files.TruststorePEM,
		"sasl.mechanism": "SCRAM-SHA-512",
		"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user +
			`" password="` + password + `";`,
	}
}
