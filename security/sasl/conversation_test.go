package sasl

import (
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/security"
)

func plainSettings() *Settings {
	return &Settings{Listener: "CONTROLLER", Mechanisms: []string{Plain, ScramSHA256},
		PlainUsers:  map[string]security.Secret{"alice": {Value: "alice-secret", Set: true}, "bob": {Value: "bob-secret", Set: true}},
		MaxReauthMs: map[string]int64{Plain: 60000, ScramSHA256: 0}}
}

// A conversation admits requests in Apache's order and answers a failed
// SaslAuthenticate with Apache's words, naming no credential.
func TestConversationOrderAndAnswers(t *testing.T) {
	c := NewConversation(plainSettings(), nil, "127.0.0.1", nil)
	for key, want := range map[int16]string{36: "SaslAuthenticate before SaslHandshake", 3: "Metadata before SASL authentication completed"} {
		if err := c.Admit(key); err == nil || err.Error() != want {
			t.Errorf("key %d before the handshake: %v, want %q", key, err, want)
		}
	}
	if c.Admit(18) != nil || c.Admit(17) != nil {
		t.Fatal("ApiVersions or SaslHandshake refused before the handshake")
	}
	if err := c.Start(Plain, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Admit(17); err == nil || err.Error() != "a second SaslHandshake" {
		t.Errorf("second handshake: %v", err)
	}
	_, _, msg, err := c.Authenticate([]byte("\x00alice\x00wrong"))
	if want := "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"; msg != want || err == nil {
		t.Errorf("wrong password: %q, %v", msg, err)
	}
	if strings.Contains(msg+err.Error(), "wrong") {
		t.Errorf("a failure repeats the password: %q, %v", msg, err)
	}

	c = NewConversation(plainSettings(), nil, "127.0.0.1", nil)
	if err := c.Start(Plain, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, done, _, err := c.Authenticate([]byte("\x00alice\x00alice-secret")); !done || err != nil {
		t.Fatalf("right password: %v %v", done, err)
	}
	now := time.Unix(1000, 0)
	if s := c.Session(now); s.Principal.String() != "User:alice" || !s.Expires.Equal(now.Add(time.Minute)) {
		t.Errorf("session %+v", s)
	}
}

// A re-authentication keeps the mechanism and the principal, with
// Apache's answers when it does not.
func TestConversationReauthentication(t *testing.T) {
	prev := &Session{Mechanism: Plain, Principal: security.Principal{Type: "User", Name: "alice"}}
	c := NewConversation(plainSettings(), nil, "127.0.0.1", prev)
	if err := c.Start(Plain, 1, nil); err != nil {
		t.Fatal(err)
	}
	_, _, msg, _ := c.Authenticate([]byte("\x00bob\x00bob-secret"))
	if msg != "Cannot change principals during re-authentication from User.alice: User.bob" {
		t.Errorf("another principal: %q", msg)
	}
	c = NewConversation(plainSettings(), nil, "127.0.0.1", prev)
	if err := c.Start(ScramSHA256, 1, nil); err == nil || !strings.Contains(err.Error(), "SCRAM credentials") {
		t.Fatalf("SCRAM with no credentials: %v", err)
	}
	c = NewConversation(plainSettings(), nil, "127.0.0.1", prev)
	if err := c.Start(ScramSHA256, 1, noCredentials{}); err != nil {
		t.Fatal(err)
	}
	_, _, msg, _ = c.Authenticate([]byte("n,,n=alice,r=abc"))
	if msg != "SASL mechanism 'SCRAM-SHA-256' requested by client is not supported for re-authentication of mechanism 'PLAIN'" {
		t.Errorf("another mechanism: %q", msg)
	}
	c = NewConversation(plainSettings(), nil, "127.0.0.1", prev)
	if err := c.Start(Plain, 0, nil); err == nil {
		t.Error("SaslHandshake v0 started a re-authentication")
	}
}
