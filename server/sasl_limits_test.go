package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/xdg-go/scram"

	"github.com/kraftd/kraftd/internal/wiretest"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/protocol"
)

// loginAttempt is how one login ended: the last error code and message,
// and when the request that drew them was sent.
type loginAttempt struct {
	code int16
	msg  string
	sent time.Time
}

// tryLogin runs SaslHandshake v1 and SaslAuthenticate v2 with m over c.
func tryLogin(t *testing.T, c *wiretest.Conn, m sasl.Mechanism) loginAttempt {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	sent := time.Now()
	c.Send(hs, 1)
	if _, r := c.Recv(hs); r.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		return loginAttempt{code: r.(*kmsg.SASLHandshakeResponse).ErrorCode, sent: sent}
	}
	session, token, err := m.Authenticate(context.Background(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for corr := int32(2); ; corr++ {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = token
		sent = time.Now()
		c.Send(auth, corr)
		_, r := c.Recv(auth)
		resp := r.(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = *resp.ErrorMessage
			}
			return loginAttempt{code: resp.ErrorCode, msg: msg, sent: sent}
		}
		var done bool
		if done, token, err = session.Challenge(resp.SASLAuthBytes); err != nil {
			t.Fatalf("client refused the server's answer: %v", err)
		}
		if done {
			return loginAttempt{sent: sent}
		}
	}
}

// dialFrom connects to addr from the loopback address local (127.x.y.z),
// so one test can be many clients.
func dialFrom(t *testing.T, local, addr string) *wiretest.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 20 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	return wiretest.NewConn(t, c)
}

// limitedSASLServer is startSASLServer with the Server, and SCRAM users
// carol (SHA-256) and dave (SHA-512).
func limitedSASLServer(t *testing.T, extra map[string]string) (*Server, string, *syncBuffer) {
	t.Helper()
	s, _, pb, logs := startTLSServer(t, saslProps(t, extra))
	b := &scramBackend{pb, map[metadata.ScramKey]metadata.UserScramCredentialRecord{}}
	b.addScram(t, scram.SHA256, 1, "carol", "carol-secret")
	b.addScram(t, scram.SHA512, 2, "dave", "dave-secret")
	s.backend = b
	return s, s.Addr("CONTROLLER").String(), logs
}

// loginMechs builds, for each mechanism, the mechanism a client uses with
// a user's password.
var loginMechs = []struct {
	name string
	user string
	good string
	mech func(user, pass string) sasl.Mechanism
}{
	{"PLAIN", "alice", "alice-secret", func(u, p string) sasl.Mechanism { return plain.Auth{User: u, Pass: p}.AsMechanism() }},
	{"SCRAM-SHA-256", "carol", "carol-secret", func(u, p string) sasl.Mechanism { return kscram.Auth{User: u, Pass: p}.AsSha256Mechanism() }},
	{"SCRAM-SHA-512", "dave", "dave-secret", func(u, p string) sasl.Mechanism { return kscram.Auth{User: u, Pass: p}.AsSha512Mechanism() }},
}

// noFailureBounds turns sasl_limits.go's bounds off, for the tests of
// the delay alone.
var noFailureBounds = map[string]string{
	"kraftd.sasl.max.failed.authentications.per.address":   "0",
	"kraftd.sasl.max.failed.authentications.per.principal": "0",
}

func withProps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestSASLFailureAnswerIsHeld checks every way a first authentication can
// fail: the answer (or, when there is none, the close) comes no sooner
// than connection.failed.authentication.delay.ms after the request that
// failed, as on Apache, so that the client cannot go on guessing at once.
func TestSASLFailureAnswerIsHeld(t *testing.T) {
	const delay = 2 * time.Second
	_, addr, _ := limitedSASLServer(t, withProps(noFailureBounds, map[string]string{
		"connection.failed.authentication.delay.ms": fmt.Sprint(delay.Milliseconds())}))
	type outcome struct {
		sent, answered time.Time
		got            string
	}
	cases := map[string]func(c *wiretest.Conn) outcome{}
	for _, m := range loginMechs {
		for _, who := range []struct{ user, pass string }{{m.user, "wrong"}, {"mallory", m.good}} {
			cases[m.name+" "+who.user] = func(c *wiretest.Conn) outcome {
				a := tryLogin(t, c, m.mech(who.user, who.pass))
				return outcome{a.sent, time.Now(), fmt.Sprint(kerr.ErrorForCode(a.code))}
			}
		}
	}
	cases["unknown mechanism"] = func(c *wiretest.Conn) outcome {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = "GSSAPI"
		sent := time.Now()
		c.Send(hs, 1)
		_, r := c.Recv(hs)
		return outcome{sent, time.Now(), fmt.Sprint(kerr.ErrorForCode(r.(*kmsg.SASLHandshakeResponse).ErrorCode))}
	}
	cases["ApiVersions after SaslHandshake"] = func(c *wiretest.Conn) outcome {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = "PLAIN"
		c.Send(hs, 1)
		c.Recv(hs)
		av := kmsg.NewPtrApiVersionsRequest()
		sent := time.Now()
		c.Send(av, 2)
		closed := c.Closed()
		return outcome{sent, time.Now(), fmt.Sprintf("closed %v", closed)}
	}
	cases["PLAIN v0 bare token"] = func(c *wiretest.Conn) outcome {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(0)
		hs.Mechanism = "PLAIN"
		c.Send(hs, 1)
		c.Recv(hs)
		sent := time.Now()
		c.Raw(protocol.AppendFrame(nil, []byte("\x00alice\x00not-it")))
		closed := c.Closed()
		return outcome{sent, time.Now(), fmt.Sprintf("closed %v", closed)}
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := run(wiretest.Dial(t, addr))
			if held := o.answered.Sub(o.sent); held < delay {
				t.Fatalf("%s %v after the failing request; connection.failed.authentication.delay.ms is %v", o.got, held, delay)
			}
			t.Logf("%s after %v", o.got, o.answered.Sub(o.sent).Round(time.Millisecond))
		})
	}
}

// TestSASLHeldFailuresCostNoGoroutine holds many failed logins for a long
// delay: each costs its socket and a timer, not a goroutine; logins on
// other connections go on meanwhile; and stopping the server closes the
// held connections at once.
func TestSASLHeldFailuresCostNoGoroutine(t *testing.T) {
	const held = 100
	s, addr, _ := limitedSASLServer(t, withProps(noFailureBounds, map[string]string{
		"connection.failed.authentication.delay.ms": "600000"}))
	base := runtime.NumGoroutine()
	conns := make([]*wiretest.Conn, held)
	for i := range conns {
		c := wiretest.Dial(t, addr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = "PLAIN"
		c.Send(hs, 1)
		c.Recv(hs)
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = []byte("\x00alice\x00wrong")
		c.Send(auth, 2)
		conns[i] = c
	}
	deadline := time.Now().Add(2 * time.Minute)
	for n := runtime.NumGoroutine(); n > base+held/4; n = runtime.NumGoroutine() {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines with %d failed logins held, %d before", n, held, base)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if a := tryLogin(t, wiretest.Dial(t, addr), plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); a.code != 0 {
		t.Fatalf("a good login beside held failures: %v %s", kerr.ErrorForCode(a.code), a.msg)
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("held connection %d answered or closed before the delay: %v", i, err)
		}
	}
	s.Close()
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		if !c.Closed() {
			t.Fatalf("held connection %d stays open after the server stopped", i)
		}
	}
}

// TestSASLFailureBoundPerAddress checks each mechanism: after the bound's
// failures from one address, even the right password from there is
// refused, saying why, while another address still logs in.
func TestSASLFailureBoundPerAddress(t *testing.T) {
	for _, m := range loginMechs {
		t.Run(m.name, func(t *testing.T) {
			_, addr, logs := limitedSASLServer(t, map[string]string{
				"connection.failed.authentication.delay.ms":            "0",
				"kraftd.sasl.max.failed.authentications.per.address":   "5",
				"kraftd.sasl.max.failed.authentications.per.principal": "0",
			})
			for i := range 5 {
				a := tryLogin(t, dialFrom(t, "127.0.0.1", addr), m.mech(fmt.Sprintf("guess-%d", i), "x"))
				if a.code != kerr.SaslAuthenticationFailed.Code || !strings.Contains(a.msg, "invalid credentials") {
					t.Fatalf("failure %d: %v %q", i, kerr.ErrorForCode(a.code), a.msg)
				}
			}
			a := tryLogin(t, dialFrom(t, "127.0.0.1", addr), m.mech(m.user, m.good))
			if a.code != kerr.SaslAuthenticationFailed.Code || !strings.Contains(a.msg, "too many failed authentications from 127.0.0.1") {
				t.Fatalf("the right password after 5 failures from the address: %v %q", kerr.ErrorForCode(a.code), a.msg)
			}
			if a := tryLogin(t, dialFrom(t, "127.0.0.2", addr), m.mech(m.user, m.good)); a.code != 0 {
				t.Fatalf("another address: %v %q", kerr.ErrorForCode(a.code), a.msg)
			}
			logs.waitLog(t, "too many failed authentications from 127.0.0.1", "SASL authentication failed")
		})
	}
}

// TestSASLFailureBoundPerPrincipal checks each mechanism: after the
// bound's failures as one principal, an address that failed is refused
// even the right password, while an address with no failure still logs
// in (so no stranger can lock a quorum's peers out), until it fails too.
func TestSASLFailureBoundPerPrincipal(t *testing.T) {
	for _, m := range loginMechs {
		t.Run(m.name, func(t *testing.T) {
			s, addr, _ := limitedSASLServer(t, map[string]string{
				"connection.failed.authentication.delay.ms":            "0",
				"kraftd.sasl.max.failed.authentications.per.address":   "0",
				"kraftd.sasl.max.failed.authentications.per.principal": "3",
			})
			login := func(from, pass string) loginAttempt {
				return tryLogin(t, dialFrom(t, from, addr), m.mech(m.user, pass))
			}
			for i := range 3 {
				if a := login(fmt.Sprintf("127.0.1.%d", i+1), "wrong"); !strings.Contains(a.msg, "invalid credentials") {
					t.Fatalf("failure %d: %v %q", i, kerr.ErrorForCode(a.code), a.msg)
				}
			}
			want := "too many failed authentications as " + m.user
			if a := login("127.0.1.1", m.good); a.code != kerr.SaslAuthenticationFailed.Code || !strings.Contains(a.msg, want) {
				t.Fatalf("the right password from an address that failed: %v %q", kerr.ErrorForCode(a.code), a.msg)
			}
			if a := login("127.0.1.9", m.good); a.code != 0 {
				t.Fatalf("the right password from an address with no failure: %v %q", kerr.ErrorForCode(a.code), a.msg)
			}
			login("127.0.1.9", "wrong")
			if a := login("127.0.1.9", m.good); !strings.Contains(a.msg, want) {
				t.Fatalf("the right password after that address failed: %v %q", kerr.ErrorForCode(a.code), a.msg)
			}
			// Made-up user names get no bucket: they cost no memory.
			for i := range 200 {
				tryLogin(t, dialFrom(t, "127.0.2.1", addr), m.mech(fmt.Sprintf("nobody-%d", i), "x"))
			}
			if _, n := s.failures.Buckets(); n != 1 {
				t.Fatalf("%d principal buckets after failures as one real user and 200 made-up ones", n)
			}
		})
	}
}
