package sasl

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/security"
)

// Session is what an authenticated connection proved, and until when.
type Session struct {
	Mechanism string
	Principal security.Principal
	// Expires is the end of the session; zero when it has no lifetime
	// (connections.max.reauth.ms 0), and then it never re-authenticates.
	Expires time.Time
	// ReauthStarted is when the last re-authentication began.
	ReauthStarted time.Time
}

// Expired reports whether the session has ended at now.
func (s *Session) Expired(now time.Time) bool {
	return !s.Expires.IsZero() && now.After(s.Expires)
}

// conversationState is where a connection is in authenticating.
type conversationState int

const (
	awaitHandshake    conversationState = iota // ApiVersions or SaslHandshake
	awaitAuthenticate                          // SaslAuthenticate (handshake v1)
	awaitRawToken                              // a bare token frame (handshake v0)
)

// Conversation is one connection's authentication, or the
// re-authentication (KIP-368) of a session, with the rules of Apache's
// SaslServerAuthenticator: ApiVersions and SaslHandshake first, then
// SaslAuthenticate requests (handshake v1) or bare token frames (v0),
// until the mechanism is done or fails. It decides what each request
// may do and what a failed SaslAuthenticate answers; the caller reads,
// decodes and writes. Every error ends the connection and is worded for
// the log, never with a credential.
type Conversation struct {
	settings *Settings
	limits   *FailureLimits
	address  string // the client's failure-bucket key (AddressKey)
	// prev is the session being re-authenticated, nil on a first
	// authentication; badMechanism, when set, is why the handshake's
	// mechanism cannot re-authenticate prev.
	prev         *Session
	badMechanism string

	state     conversationState
	mechanism string
	exchange  Exchange
	// lifetime is the session lifetime granted when the exchange completed
	// (connections.max.reauth.ms for the mechanism), 0 for none.
	lifetime time.Duration
}

// NewConversation starts the authentication of a connection from
// address (AddressKey) to a listener with settings, within limits (nil:
// none); prev is the session to re-authenticate, nil on a first
// authentication.
func NewConversation(settings *Settings, limits *FailureLimits, address string, prev *Session) *Conversation {
	return &Conversation{settings: settings, limits: limits, address: address, prev: prev}
}

// What names the conversation for logs and answers.
func (c *Conversation) What() string {
	if c.prev != nil {
		return "re-authentication"
	}
	return "authentication"
}

// Mechanism is the mechanism the handshake chose, "" before it.
func (c *Conversation) Mechanism() string { return c.mechanism }

// Enabled are the mechanisms the listener enables, in its order.
func (c *Conversation) Enabled() []string { return c.settings.Mechanisms }

// Lifetime is the session lifetime granted once the exchange is done.
func (c *Conversation) Lifetime() time.Duration { return c.lifetime }

// AwaitsRawToken reports whether the next frame is a bare token (after a
// SaslHandshake v0) rather than a request.
func (c *Conversation) AwaitsRawToken() bool { return c.state == awaitRawToken }

// Admit says why a request with API key key may not come now, or nil:
// only ApiVersions and SaslHandshake before the handshake, and only
// SaslAuthenticate after it.
func (c *Conversation) Admit(key int16) error {
	switch key {
	case apiVersionsKey:
		if c.state != awaitHandshake {
			return errors.New("ApiVersions after SaslHandshake")
		}
	case handshakeKey:
		if c.state != awaitHandshake {
			return errors.New("a second SaslHandshake")
		}
	case authenticateKey:
		if c.state != awaitAuthenticate {
			return errors.New("SaslAuthenticate before SaslHandshake")
		}
	default:
		return fmt.Errorf("%s before SASL authentication completed", kmsg.NameForKey(key))
	}
	return nil
}

// API keys of the requests a conversation admits.
const (
	handshakeKey    = 17
	apiVersionsKey  = 18
	authenticateKey = 36
)

// Start begins mechanism, which a SaslHandshake of version asked for and
// the listener enables, once the handshake's answer is written; creds
// (nil: none) checks SCRAM.
func (c *Conversation) Start(mechanism string, version int16, creds ScramCredentialSource) error {
	ex, err := NewExchange(mechanism, c.settings, creds)
	if err != nil {
		return err
	}
	c.mechanism, c.exchange = mechanism, ex
	c.state = awaitAuthenticate
	if c.prev != nil && mechanism != c.prev.Mechanism {
		// Apache answers the handshake and fails the SaslAuthenticate.
		c.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
			mechanism, c.prev.Mechanism)
	}
	if version == 0 {
		if c.prev != nil {
			return errors.New("SaslHandshake v0 cannot re-authenticate (KIP-368 needs SaslAuthenticate)")
		}
		c.state = awaitRawToken
	}
	return nil
}

// RawToken takes a bare token frame (handshake v0) and returns the bare
// answer. A v0 client has no way to hear why it failed: as Apache, the
// caller just closes.
func (c *Conversation) RawToken(token []byte) (answer []byte, done bool, err error) {
	answer, done, err = c.step(token)
	if err == nil && done {
		c.lifetime = c.settings.ReauthLifetime(c.mechanism)
	}
	return answer, done, err
}

// Authenticate takes a SaslAuthenticate request's token. On a failure,
// message is what Apache answers (with SASL_AUTHENTICATION_FAILED) and
// err the reason for the log.
func (c *Conversation) Authenticate(token []byte) (answer []byte, done bool, message string, err error) {
	if c.badMechanism != "" {
		return nil, false, c.badMechanism, errors.New(c.badMechanism)
	}
	answer, done, err = c.step(token)
	var limited *LimitError
	if errors.As(err, &limited) {
		return nil, false, "Authentication failed: " + limited.Reason, err
	}
	if err != nil {
		// Apache's answer says only that the credentials were wrong; the
		// log line has the reason.
		msg := "Authentication failed during " + c.What() + " due to invalid credentials with SASL mechanism " + c.mechanism
		return nil, false, msg, err
	}
	if done && c.prev != nil && c.exchange.User() != c.prev.Principal.Name {
		msg := fmt.Sprintf("Cannot change principals during re-authentication from %s.%s: User.%s",
			c.prev.Principal.Type, c.prev.Principal.Name, c.exchange.User())
		return nil, false, msg, errors.New(msg)
	}
	if done {
		c.lifetime = c.settings.ReauthLifetime(c.mechanism)
	}
	return answer, done, "", nil
}

// step passes token to the mechanism within the bounds on failed logins.
func (c *Conversation) step(token []byte) ([]byte, bool, error) {
	return c.limits.Step(c.address, c.exchange, token)
}

// Session is the session a completed exchange proved, from now.
func (c *Conversation) Session(now time.Time) *Session {
	s := &Session{Mechanism: c.mechanism, Principal: security.Principal{Type: "User", Name: c.exchange.User()}}
	if c.lifetime > 0 {
		s.Expires = now.Add(c.lifetime)
	}
	return s
}
