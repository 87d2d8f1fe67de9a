package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kraftd/kraftd/internal/testpki"
	"github.com/kraftd/kraftd/internal/wiretest"
)

// countingMeter records what the server tells its Meter.
type countingMeter struct {
	mu       sync.Mutex
	outcomes map[string]int
	open     int
	requests map[int16]int
}

func newCountingMeter() *countingMeter {
	return &countingMeter{outcomes: map[string]int{}, requests: map[int16]int{}}
}

func (m *countingMeter) Connection(listener, outcome string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes[listener+"/"+outcome]++
	if outcome == ConnAccepted {
		m.open++
	}
}

func (m *countingMeter) ConnectionClosed(string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.open--
}

func (m *countingMeter) Reauthentication(listener, outcome string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes[listener+"/reauth_"+outcome]++
}

func (m *countingMeter) Request(_ string, key int16, _ time.Duration, _ bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[key]++
}

// waitFor waits until cond holds of the meter, failing after a generous
// bound.
func (m *countingMeter) waitFor(t *testing.T, what string, cond func(*countingMeter) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.mu.Lock()
		ok := cond(m)
		state := fmt.Sprintf("%v open %d requests %v", m.outcomes, m.open, m.requests)
		m.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("meter never saw %s: %s", what, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startMeteredServer is startTLSServer with a meter.
func startMeteredServer(t *testing.T, props map[string]string) (string, *countingMeter) {
	t.Helper()
	cfg, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(t))
	if err := cfg.LoadTLS(log); err != nil {
		t.Fatal(err)
	}
	b := &principalBackend{stillBackend{wiretest.NewBackend()}, make(chan Principal, 16)}
	s := New(cfg, &scramBackend{b, nil}, log)
	// No client here is meant to time out: a loaded machine may be slow.
	s.handshakeLimit = 10 * time.Second
	m := newCountingMeter()
	s.SetMeter(m)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s.Addr("CONTROLLER").String(), m
}

// A TLS listener counts an accepted connection and its requests, and each
// failed handshake (plaintext on the TLS port, an unknown CA) as
// tls_failed; the connection count drops as connections close.
func TestMeterCountsTLSOutcomes(t *testing.T) {
	k := newPKI(t)
	addr, m := startMeteredServer(t, sslProps(t, k, map[string]string{"ssl.client.auth": "required"}))
	good, err := dialTLSClient(t, addr, k.issue(t, testpki.Options{}), pool(k.ca))
	if err != nil {
		t.Fatal(err)
	}
	sendVote(good)
	m.waitFor(t, "an accepted connection and its Vote", func(m *countingMeter) bool {
		return m.outcomes["CONTROLLER/accepted"] == 1 && m.open == 1 && m.requests[52] == 1
	})
	plainConn := wiretest.Dial(t, addr)
	plainConn.Write([]byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0})
	otherCA, err := testpki.NewCA("another ca")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := dialTLSClient(t, addr, must(otherCA.Issue(testpki.Options{})), pool(k.ca)); err == nil {
		c.Write([]byte{0, 0, 0, 1, 0})
	}
	m.waitFor(t, "two failed handshakes", func(m *countingMeter) bool { return m.outcomes["CONTROLLER/tls_failed"] == 2 })
	good.Close()
	m.waitFor(t, "the good connection closing", func(m *countingMeter) bool { return m.open == 0 })
}

// A SASL listener counts a failed authentication as sasl_failed and a
// successful one as accepted.
func TestMeterCountsSASLOutcomes(t *testing.T) {
	addr, m := startMeteredServer(t, saslProps(t, map[string]string{"connection.failed.authentication.delay.ms": "0"}))
	bad := wiretest.Dial(t, addr)
	if code := saslLogin(t, bad, plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()); code != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("wrong password: error code %d", code)
	}
	m.waitFor(t, "a failed authentication", func(m *countingMeter) bool { return m.outcomes["CONTROLLER/sasl_failed"] == 1 })
	good := wiretest.Dial(t, addr)
	if code := saslLogin(t, good, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); code != 0 {
		t.Fatalf("right password: error code %d", code)
	}
	sendVote(good)
	m.waitFor(t, "an authenticated connection and its Vote", func(m *countingMeter) bool {
		return m.outcomes["CONTROLLER/accepted"] == 1 && m.requests[52] == 1
	})
}

// Re-authentications are counted by outcome: one that keeps the principal
// succeeds; one that changes it fails (and the connection closes); a
// request after the session ended without one closes the connection as
// expired.
func TestMeterCountsReauthentications(t *testing.T) {
	addr, m := startMeteredServer(t, saslProps(t, map[string]string{
		"listener.name.controller.connections.max.reauth.ms": "2000",
		"connection.failed.authentication.delay.ms":          "0",
	}))
	alice := plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()
	kept, changed, lapsed := wiretest.Dial(t, addr), wiretest.Dial(t, addr), wiretest.Dial(t, addr)
	for _, c := range []*wiretest.Conn{kept, changed, lapsed} {
		if code, _, _ := saslLoginAt(t, c, alice, 1); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	lapsedAuthed := time.Now()
	time.Sleep(1100 * time.Millisecond) // past the least interval between two starts
	if code, msg, _ := saslLoginAt(t, kept, alice, 10); code != 0 {
		t.Fatalf("re-authentication: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, _, _ := saslLoginAt(t, changed, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism(), 10); code == 0 {
		t.Fatal("a re-authentication as another user succeeded")
	}
	sleepUntil(lapsedAuthed.Add(reauthLifetime + 300*time.Millisecond))
	if apiVersionsAnswered(lapsed, 30) {
		t.Fatal("a connection past its session's end was served")
	}
	m.waitFor(t, "one re-authentication of each outcome", func(m *countingMeter) bool {
		return m.outcomes["CONTROLLER/reauth_succeeded"] == 1 && m.outcomes["CONTROLLER/reauth_failed"] == 1 &&
			m.outcomes["CONTROLLER/reauth_expired"] == 1
	})
}
