package server

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/xdg-go/scram"

	"github.com/kraftd/kraftd/internal/wiretest"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/peer"
	"github.com/kraftd/kraftd/protocol"
	kraftdsasl "github.com/kraftd/kraftd/security/sasl"
)

const testPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required
	username="admin" password="admin-secret"
	user_admin="admin-secret" user_alice="alice-secret";`

// changedSASLProps is saslProps with change applied: an empty value
// deletes its key.
func changedSASLProps(t *testing.T, change map[string]string) map[string]string {
	props := saslProps(t, nil)
	for k, v := range change {
		if v == "" {
			delete(props, k)
		} else {
			props[k] = v
		}
	}
	return props
}

func saslProps(t *testing.T, extra map[string]string) map[string]string {
	p := map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://127.0.0.1:0", "log.dirs": t.TempDir(),
		"listener.security.protocol.map":                   "CONTROLLER:SASL_PLAINTEXT",
		"listener.name.controller.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.controller.plain.sasl.jaas.config":  testPlainJAAS,
		"sasl.mechanism.controller.protocol":               "PLAIN",
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// scramBackend serves SCRAM credentials as a metadata image holds them.
type scramBackend struct {
	*principalBackend
	creds map[metadata.ScramKey]metadata.UserScramCredentialRecord
}

func (b *scramBackend) ScramCredential(user string, mech int8) (metadata.UserScramCredentialRecord, bool) {
	r, ok := b.creds[metadata.ScramKey{Name: user, Mechanism: mech}]
	return r, ok
}

// addScram stores user's credential as `kafka-storage format --add-scram`
// would write it.
func (b *scramBackend) addScram(t *testing.T, hash scram.HashGeneratorFcn, mech int8, user, password string) {
	c, err := hash.NewClient(user, password, "")
	if err != nil {
		t.Fatal(err)
	}
	salt := []byte("a-test-salt-" + user)
	sc := c.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: 4096})
	b.creds[metadata.ScramKey{Name: user, Mechanism: mech}] = metadata.UserScramCredentialRecord{
		Name: user, Mechanism: mech, Salt: salt, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey, Iterations: 4096}
}

func startSASLServer(t *testing.T, props map[string]string) (string, *scramBackend, *syncBuffer) {
	t.Helper()
	s, _, pb, logs := startTLSServer(t, props)
	b := &scramBackend{pb, map[metadata.ScramKey]metadata.UserScramCredentialRecord{}}
	s.backend = b
	return s.Addr("CONTROLLER").String(), b, logs
}

// saslLogin drives mechanism m over c with SaslHandshake v1 and
// SaslAuthenticate v2, as franz-go's client does; it returns the last
// SaslAuthenticate error code.
func saslLogin(t *testing.T, c *wiretest.Conn, m sasl.Mechanism) int16 {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	c.Send(hs, 1)
	if _, resp := c.Recv(hs); resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		return resp.(*kmsg.SASLHandshakeResponse).ErrorCode
	}
	session, token, err := m.Authenticate(context.Background(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for corr := int32(2); ; corr++ {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = token
		c.Send(auth, corr)
		_, r := c.Recv(auth)
		resp := r.(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 {
			return resp.ErrorCode
		}
		var done bool
		done, token, err = session.Challenge(resp.SASLAuthBytes)
		if err != nil {
			t.Fatalf("client refused the server's answer: %v", err)
		}
		if done {
			return 0
		}
	}
}

func TestSASLPlainAuthenticatesPrincipal(t *testing.T) {
	addr, b, _ := startSASLServer(t, saslProps(t, nil))
	c := wiretest.Dial(t, addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	c.Send(av, 0)
	c.Recv(av)
	if code := saslLogin(t, c, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); code != 0 {
		t.Fatalf("error %v", kerr.ErrorForCode(code))
	}
	sendVote(c)
	if p := <-b.seen; p.String() != "User:alice" {
		t.Fatalf("principal %s", p)
	}
}

func TestSASLPlainWrongPasswordFailsAndCloses(t *testing.T) {
	addr, _, logs := startSASLServer(t, saslProps(t, map[string]string{"connection.failed.authentication.delay.ms": "300"}))
	for _, auth := range []plain.Auth{{User: "alice", Pass: "not-alices-password"}, {User: "mallory", Pass: "alice-secret"}} {
		c := wiretest.Dial(t, addr)
		// The answer itself is held for the delay (as on Apache), then the
		// connection closes.
		if a := tryLogin(t, c, auth.AsMechanism()); a.code != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("%s: error code %d", auth.User, a.code)
		} else if held := time.Since(a.sent); held < 300*time.Millisecond {
			t.Errorf("answered %v after the request, before connection.failed.authentication.delay.ms", held)
		}
		if !c.Closed() {
			t.Fatal("connection stays open after a failed authentication")
		}
	}
	logs.waitLog(t, "SASL authentication failed", "invalid user name or password", "127.0.0.1:", `"mechanism":"PLAIN"`)
	if out := logs.String(); strings.Contains(out, "not-alices-password") || strings.Contains(out, "alice-secret") {
		t.Fatalf("a password reached the log:\n%s", out)
	}
}

func TestSASLNothingServedBeforeAuthentication(t *testing.T) {
	addr, b, logs := startSASLServer(t, saslProps(t, nil))
	c := wiretest.Dial(t, addr)
	v := kmsg.NewPtrVoteRequest()
	v.SetVersion(1)
	c.Send(v, 1)
	if !c.Closed() {
		t.Fatal("a Vote before authentication was not refused")
	}
	select {
	case p := <-b.seen:
		t.Fatalf("Vote reached the quorum as %s", p)
	default:
	}
	logs.waitLog(t, "Vote before SASL authentication completed")

	// A SaslAuthenticate before the handshake is refused the same way.
	c = wiretest.Dial(t, addr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	c.Send(auth, 1)
	if !c.Closed() {
		t.Fatal("SaslAuthenticate before SaslHandshake was served")
	}
}

func TestSASLUnknownMechanismIsRefused(t *testing.T) {
	addr, _, logs := startSASLServer(t, saslProps(t, map[string]string{"listener.name.controller.sasl.enabled.mechanisms": "PLAIN"}))
	c := wiretest.Dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "SCRAM-SHA-512"
	c.Send(hs, 1)
	_, r := c.Recv(hs)
	resp := r.(*kmsg.SASLHandshakeResponse)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN" {
		t.Fatalf("%+v", resp)
	}
	if !c.Closed() {
		t.Fatal("connection stays open")
	}
	logs.waitLog(t, "SCRAM-SHA-512", "this listener enables")
}

func TestSASLScramAuthenticatesFromImageCredentials(t *testing.T) {
	addr, b, _ := startSASLServer(t, saslProps(t, nil))
	b.addScram(t, scram.SHA256, 1, "carol", "carol-secret")
	b.addScram(t, scram.SHA512, 2, "dave", "dave-secret")
	for _, tc := range []struct {
		m    sasl.Mechanism
		want int16
		user string
	}{
		{kscram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism(), 0, "carol"},
		{kscram.Auth{User: "dave", Pass: "dave-secret"}.AsSha512Mechanism(), 0, "dave"},
		{kscram.Auth{User: "dave", Pass: "wrong"}.AsSha512Mechanism(), kerr.SaslAuthenticationFailed.Code, ""},
		// carol has no SCRAM-SHA-512 credential.
		{kscram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism(), kerr.SaslAuthenticationFailed.Code, ""},
	} {
		c := wiretest.Dial(t, addr)
		if code := saslLogin(t, c, tc.m); code != tc.want {
			t.Fatalf("%s for %s: code %d, want %d", tc.m.Name(), tc.user, code, tc.want)
		}
		if tc.want != 0 {
			if !c.Closed() {
				t.Fatal("connection stays open after a failed authentication")
			}
			continue
		}
		sendVote(c)
		if p := <-b.seen; p.String() != "User:"+tc.user {
			t.Fatalf("principal %s", p)
		}
	}
}

func TestSASLHandshakeV0ExchangesBareTokens(t *testing.T) {
	addr, b, _ := startSASLServer(t, saslProps(t, nil))
	c := wiretest.Dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(0)
	hs.Mechanism = "PLAIN"
	c.Send(hs, 1)
	if _, r := c.Recv(hs); r.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		t.Fatal(r)
	}
	c.Raw(protocol.AppendFrame(nil, []byte("\x00alice\x00alice-secret")))
	answer := make([]byte, 4)
	if _, err := c.Read(answer); err != nil || string(answer) != "\x00\x00\x00\x00" {
		t.Fatalf("answer %q, %v", answer, err)
	}
	sendVote(c)
	if p := <-b.seen; p.String() != "User:alice" {
		t.Fatalf("principal %s", p)
	}
}

func TestSASLRequestsAfterAuthenticationAreIllegal(t *testing.T) {
	addr, _, _ := startSASLServer(t, saslProps(t, nil))
	c := wiretest.Dial(t, addr)
	if code := saslLogin(t, c, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()); code != 0 {
		t.Fatal(code)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	c.Send(hs, 9)
	if _, r := c.Recv(hs); r.(*kmsg.SASLHandshakeResponse).ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatal(r)
	}
}

func TestSASLConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change map[string]string
		key    string
		want   string
	}{
		{"no mechanisms", map[string]string{"listener.name.controller.sasl.enabled.mechanisms": ""}, "sasl.enabled.mechanisms", "GSSAPI"},
		{"GSSAPI", map[string]string{"listener.name.controller.sasl.enabled.mechanisms": "GSSAPI"}, "listener.name.controller.sasl.enabled.mechanisms", "kraftd serves"},
		{"PLAIN without JAAS", map[string]string{"listener.name.controller.plain.sasl.jaas.config": ""}, "listener.name.controller.plain.sasl.jaas.config", "is required"},
		{"wrong module", map[string]string{"listener.name.controller.plain.sasl.jaas.config": kraftdsasl.ScramLoginModule + " required;"}, "listener.name.controller.plain.sasl.jaas.config", "needs"},
		{"bad JAAS", map[string]string{"listener.name.controller.plain.sasl.jaas.config": kraftdsasl.PlainLoginModule + ` required user_a="x"`}, "listener.name.controller.plain.sasl.jaas.config", "semicolon"},
		{"SASL_SSL without keystore", map[string]string{"listener.security.protocol.map": "CONTROLLER:SASL_SSL"}, "ssl.keystore.location", "needs a keystore"},
		{"reauth below zero", map[string]string{"listener.name.controller.plain.connections.max.reauth.ms": "-1"}, "listener.name.controller.plain.connections.max.reauth.ms", "below the minimum"},
		{"reauth on another listener", map[string]string{"listener.name.other.connections.max.reauth.ms": "60000"}, "listener.name.other.connections.max.reauth.ms", "no listener"},
		{"other listener", map[string]string{"listener.name.other.sasl.enabled.mechanisms": "PLAIN"}, "listener.name.other.sasl.enabled.mechanisms", "no listener"},
		{"kerberos", map[string]string{"sasl.kerberos.service.name": "kafka"}, "sasl.kerberos.service.name", "does not honour"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(changedSASLProps(t, tc.change))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want key %s and %q", err, tc.key, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("a password reached the error: %v", err)
			}
		})
	}
	cfg, err := ParseConfig(saslProps(t, map[string]string{"sasl.enabled.mechanisms": "PLAIN"}))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.SASL["CONTROLLER"]
	if len(s.Mechanisms) != 3 || s.PlainUsers["alice"].Value != "alice-secret" || len(s.PlainUsers) != 2 {
		t.Fatalf("%+v", s)
	}
	if len(s.MaxReauthMs) != 3 || s.MaxReauthMs["PLAIN"] != 0 {
		t.Fatalf("default connections.max.reauth.ms: %v", s.MaxReauthMs)
	}
	// The most specific key wins: mechanism, then listener, then top level.
	cfg, err = ParseConfig(saslProps(t, map[string]string{
		"connections.max.reauth.ms":                                        "1000",
		"listener.name.controller.connections.max.reauth.ms":               "2000",
		"listener.name.controller.scram-sha-512.connections.max.reauth.ms": "3000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.SASL["CONTROLLER"].MaxReauthMs; got["PLAIN"] != 2000 || got["SCRAM-SHA-256"] != 2000 || got["SCRAM-SHA-512"] != 3000 {
		t.Fatalf("connections.max.reauth.ms by mechanism: %v", got)
	}
	if len(cfg.Unknown) != 0 {
		t.Fatalf("keys reported unknown: %v", cfg.Unknown)
	}
	// Without a SASL listener a non-zero value asks for what nothing does.
	plain := saslProps(t, map[string]string{"listener.security.protocol.map": "CONTROLLER:PLAINTEXT", "connections.max.reauth.ms": "1000"})
	for k := range plain {
		if strings.Contains(k, "sasl") {
			delete(plain, k)
		}
	}
	if _, err := ParseConfig(plain); err == nil || !strings.Contains(err.Error(), "connections.max.reauth.ms") {
		t.Fatalf("connections.max.reauth.ms without SASL: %v", err)
	}
}

// The peer client authenticates with sasl.mechanism.controller.protocol
// and the listener's JAAS username and password, and logs a failure.
func TestPeersOverSASL(t *testing.T) {
	addr, b, _ := startSASLServer(t, saslProps(t, nil))
	b.addScram(t, scram.SHA512, 2, "controller", "scram-secret")
	send := func(t *testing.T, extra map[string]string) (peer.Result, *syncBuffer) {
		c, err := ParseConfig(saslProps(t, extra))
		if err != nil {
			t.Fatal(err)
		}
		logs := &syncBuffer{}
		results := make(chan peer.Result, 1)
		p := peer.New("raft-client-2", 5*time.Second, func(r peer.Result) { results <- r }, zerolog.New(logs))
		defer p.Close()
		usePeerSecurity(t, p, c)
		p.SetAddress(1, addr)
		v := kmsg.NewPtrVoteRequest()
		v.SetVersion(1)
		p.Send(1, 1, v)
		return <-results, logs
	}
	if r, _ := send(t, nil); r.Err != nil {
		t.Fatalf("PLAIN: %v", r.Err)
	}
	if p := <-b.seen; p.String() != "User:admin" {
		t.Errorf("the server saw %s", p)
	}
	scramJAAS := map[string]string{
		"sasl.mechanism.controller.protocol":                      "SCRAM-SHA-512",
		"listener.name.controller.scram-sha-512.sasl.jaas.config": kraftdsasl.ScramLoginModule + ` required username="controller" password="scram-secret";`,
	}
	if r, _ := send(t, scramJAAS); r.Err != nil {
		t.Fatalf("SCRAM-SHA-512: %v", r.Err)
	}
	if p := <-b.seen; p.String() != "User:controller" {
		t.Errorf("the server saw %s", p)
	}
	wrong := map[string]string{"listener.name.controller.plain.sasl.jaas.config": kraftdsasl.PlainLoginModule +
		` required username="admin" password="wrong-password" user_admin="admin-secret";`}
	r, logs := send(t, wrong)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: %v", r.Err)
	}
	logs.waitLog(t, "SASL authentication with peer failed", `"peer":1`, "PLAIN")
	if strings.Contains(logs.String(), "wrong-password") {
		t.Fatalf("the password reached the log: %s", logs)
	}
}

func TestSASLControllerMechanismConfig(t *testing.T) {
	for _, tc := range []struct {
		change map[string]string
		key    string
		want   string
	}{
		{map[string]string{"sasl.mechanism.controller.protocol": ""}, "sasl.mechanism.controller.protocol", "GSSAPI"},
		{map[string]string{"sasl.mechanism.controller.protocol": "SCRAM-SHA-256", "listener.name.controller.sasl.enabled.mechanisms": "PLAIN"},
			"sasl.mechanism.controller.protocol", "does not enable"},
		{map[string]string{"sasl.mechanism.controller.protocol": "SCRAM-SHA-256"}, "listener.name.controller.scram-sha-256.sasl.jaas.config", "username"},
		{map[string]string{"listener.name.controller.plain.sasl.jaas.config": kraftdsasl.PlainLoginModule + ` required user_a="a-secret";`},
			"listener.name.controller.plain.sasl.jaas.config", "no username and password"},
	} {
		_, err := ParseConfig(changedSASLProps(t, tc.change))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%v: error %v, want key %s and %q", tc.change, err, tc.key, tc.want)
		}
	}
}

// SASL_SSL runs the SASL exchange inside TLS; the SASL user is the
// principal, and a top-level ssl.client.auth (which Apache ignores on
// SASL_SSL) is refused rather than silently dropped.
func TestSASLOverTLS(t *testing.T) {
	k := newPKI(t)
	props := sslProps(t, k, nil)
	for key, v := range saslProps(t, map[string]string{"listener.security.protocol.map": "CONTROLLER:SASL_SSL"}) {
		props[key] = v
	}
	addr, b, _ := startSASLServer(t, props)
	c, err := dialTLSClient(t, addr, nil, pool(k.ca))
	if err != nil {
		t.Fatal(err)
	}
	if code := saslLogin(t, c, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	sendVote(c)
	if p := <-b.seen; p.String() != "User:alice" {
		t.Fatalf("principal %s", p)
	}
	// A plaintext client never reaches the SASL exchange.
	plainConn := wiretest.Dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	plainConn.Send(hs, 1)
	if !plainConn.Closed() {
		t.Fatal("a plaintext client was served on SASL_SSL")
	}

	props["ssl.client.auth"] = "required"
	var ce *ConfigError
	if _, err := ParseConfig(props); !errors.As(err, &ce) || ce.Key != "ssl.client.auth" {
		t.Fatalf("top-level ssl.client.auth on SASL_SSL: %v", err)
	}
	delete(props, "ssl.client.auth")
	props["listener.name.controller.ssl.client.auth"] = "required"
	cfg, err := ParseConfig(props)
	if err != nil || cfg.TLS["CONTROLLER"].ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("listener ssl.client.auth on SASL_SSL: %v", err)
	}
}
