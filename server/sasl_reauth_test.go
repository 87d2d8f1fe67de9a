package server

import (
	"context"
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
	"github.com/kraftd/kraftd/peer"
	"github.com/kraftd/kraftd/protocol"
)

// reauthLifetime is the session lifetime the re-authentication tests
// configure: long enough for a loaded machine to finish an exchange well
// inside it.
const reauthLifetime = 2 * time.Second

// saslLoginAt is saslLogin with correlation ids from corr, returning the
// last SaslAuthenticate error code and message and the session lifetime.
func saslLoginAt(t *testing.T, c *wiretest.Conn, m sasl.Mechanism, corr int32) (int16, string, time.Duration) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	c.Send(hs, corr)
	if _, resp := c.Recv(hs); resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		return resp.(*kmsg.SASLHandshakeResponse).ErrorCode, "", 0
	}
	session, token, err := m.Authenticate(context.Background(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for {
		corr++
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = token
		c.Send(auth, corr)
		_, r := c.Recv(auth)
		resp := r.(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = *resp.ErrorMessage
			}
			return resp.ErrorCode, msg, 0
		}
		var done bool
		if done, token, err = session.Challenge(resp.SASLAuthBytes); err != nil {
			t.Fatalf("client refused the server's answer: %v", err)
		}
		if done {
			return 0, "", time.Duration(resp.SessionLifetimeMillis) * time.Millisecond
		}
	}
}

// apiVersionsAnswered sends ApiVersions and reports whether an answer
// came back before the connection closed.
func apiVersionsAnswered(c *wiretest.Conn, corr int32) bool {
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	payload := av.AppendTo(protocol.AppendRequestHeader(nil, av, corr, "test"))
	if _, err := c.Write(protocol.AppendFrame(nil, payload)); err != nil {
		return false
	}
	_, err := protocol.ReadFrame(c, 1<<24)
	return err == nil
}

// sleepUntil waits for the client's clock to pass t: the server's session
// ends no later than the client's end of the exchange plus the lifetime.
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// KIP-368 on the server: the session lifetime is answered; re-authenticating
// before it ends keeps the connection past the first session's end; a
// connection that does not re-authenticate is closed at its next request
// after the end, and logged; a second handshake within a second is an
// ordinary (illegal) request.
func TestSASLReauthentication(t *testing.T) {
	addr, _, logs := startSASLServer(t, saslProps(t, map[string]string{
		"listener.name.controller.connections.max.reauth.ms": "2000",
	}))
	alice := plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()

	kept := wiretest.Dial(t, addr)
	code, _, lifetime := saslLoginAt(t, kept, alice, 1)
	authed := time.Now()
	if code != 0 || lifetime != reauthLifetime {
		t.Fatalf("login: error %v, session lifetime %v, want %v", kerr.ErrorForCode(code), lifetime, reauthLifetime)
	}
	dropped := wiretest.Dial(t, addr)
	if code, _, _ := saslLoginAt(t, dropped, alice, 1); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	droppedAuthed := time.Now()

	sleepUntil(authed.Add(reauthLifetime / 2))
	reauthStarted := time.Now()
	if code, msg, got := saslLoginAt(t, kept, alice, 10); code != 0 || got != reauthLifetime {
		t.Fatalf("re-authentication: %v %s, lifetime %v", kerr.ErrorForCode(code), msg, got)
	}
	// Within a second of the last start, a handshake is no re-authentication.
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	kept.Send(hs, 20)
	if _, r := kept.Recv(hs); r.(*kmsg.SASLHandshakeResponse).ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("a handshake right after a re-authentication: %+v", r)
	}

	sleepUntil(droppedAuthed.Add(reauthLifetime + 300*time.Millisecond))
	if time.Now().After(reauthStarted.Add(reauthLifetime)) {
		t.Skip("the machine was too slow to check the re-authenticated session inside its lifetime")
	}
	if !apiVersionsAnswered(kept, 30) {
		t.Fatal("the re-authenticated connection was closed at the first session's end")
	}
	if apiVersionsAnswered(dropped, 30) {
		t.Fatal("a connection past its session's end was served")
	}
	logs.waitLog(t, "SASL session ended without re-authentication", "PLAIN")
}

// A re-authentication may change neither the principal nor the mechanism;
// either failure is answered with Apache's message and closes the
// connection.
func TestSASLReauthenticationKeepsPrincipalAndMechanism(t *testing.T) {
	addr, b, logs := startSASLServer(t, saslProps(t, map[string]string{"connections.max.reauth.ms": "60000"}))
	b.addScram(t, scram.SHA512, 2, "alice", "scram-secret")
	for _, tc := range []struct {
		again sasl.Mechanism
		want  string
	}{
		{plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism(), "Cannot change principals during re-authentication from User.alice: User.admin"},
		{kscram.Auth{User: "alice", Pass: "scram-secret"}.AsSha512Mechanism(), "SASL mechanism 'SCRAM-SHA-512' requested by client is not supported for re-authentication of mechanism 'PLAIN'"},
	} {
		c := wiretest.Dial(t, addr)
		if code, _, _ := saslLoginAt(t, c, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), 1); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
		code, msg, _ := saslLoginAt(t, c, tc.again, 10)
		if code != kerr.SaslAuthenticationFailed.Code || msg != tc.want {
			t.Errorf("re-authentication with %s: %v %q, want %q", tc.again.Name(), kerr.ErrorForCode(code), msg, tc.want)
		}
		if !c.Closed() {
			t.Errorf("the connection stayed open after a failed re-authentication with %s", tc.again.Name())
		}
	}
	logs.waitLog(t, "SASL re-authentication failed", "Cannot change principals")
}

// The peer client re-authenticates in place before its session ends: it
// keeps one connection across several session lifetimes, and the server
// never closes it as expired.
func TestPeersReauthenticate(t *testing.T) {
	props := saslProps(t, map[string]string{"connections.max.reauth.ms": "1500"})
	addr, b, serverLogs := startSASLServer(t, props)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() { // the backend notes each request's principal; take them
		for {
			select {
			case <-b.seen:
			case <-done:
				return
			}
		}
	}()
	cfg, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	var failures []error
	results := make(chan peer.Result, 1)
	p := peer.New("raft-client-2", 5*time.Second, func(r peer.Result) { results <- r }, zerolog.New(logs).Level(zerolog.DebugLevel))
	defer p.Close()
	usePeerSecurity(t, p, cfg)
	p.SetAddress(1, addr)
	end := time.Now().Add(3500 * time.Millisecond) // past two lifetimes of 1.5 s
	for i := uint64(1); time.Now().Before(end); i++ {
		v := kmsg.NewPtrVoteRequest()
		v.SetVersion(1)
		p.Send(1, i, v)
		if r := <-results; r.Err != nil {
			failures = append(failures, r.Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(failures) > 0 {
		t.Fatalf("%d requests failed, the first: %v", len(failures), failures[0])
	}
	logs.waitLog(t, "re-authenticated with peer", `"peer":1`)
	if out := serverLogs.String(); strings.Contains(out, "SASL session ended") {
		t.Fatalf("the server closed the peer client's connection as expired:\n%s", out)
	}
	if n := strings.Count(serverLogs.String(), `"message":"SASL authentication succeeded"`); n != 1 {
		t.Errorf("%d first authentications, want 1 (one connection throughout)", n)
	}
}
