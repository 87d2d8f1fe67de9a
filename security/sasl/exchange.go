package sasl

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"

	"github.com/xdg-go/scram"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/security"
)

// Exchange is the server side of one mechanism's conversation.
type Exchange interface {
	// Step takes the client's next token and returns the server's answer;
	// done is true once the client has proved who it is. An error is a
	// failed authentication, worded for the log without any credential.
	Step(token []byte) (answer []byte, done bool, err error)
	// User is the authenticated name once done.
	User() string
	// Claimed is the user the client has named so far, if that user
	// exists: failures are counted against it (FailureLimits). It is ""
	// before the client names one, or when no such user exists, so that
	// made-up names cost no memory.
	Claimed() string
}

// errBadCredentials is every PLAIN and SCRAM failure that a wrong user
// name or password causes: the log says no more, so that it cannot be
// used to learn which user names exist.
var errBadCredentials = errors.New("invalid user name or password")

// ScramCredentialSource is what serves SCRAM its stored keys (the node's
// backend implements it): the UserScramCredentialRecords of the committed metadata image, by user
// and mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
type ScramCredentialSource interface {
	ScramCredential(user string, mechanism int8) (metadata.UserScramCredentialRecord, bool)
}

// NewExchange starts mechanism for a connection to a listener with
// settings; creds (nil: none) checks SCRAM.
func NewExchange(mechanism string, settings *Settings, creds ScramCredentialSource) (Exchange, error) {
	switch mechanism {
	case Plain:
		return &plainExchange{users: settings.PlainUsers}, nil
	case ScramSHA256:
		return newScramExchange(creds, scram.SHA256, 1)
	case ScramSHA512:
		return newScramExchange(creds, scram.SHA512, 2)
	}
	return nil, fmt.Errorf("mechanism %s is not served", mechanism)
}

// plainExchange is RFC 4616 PLAIN: one token, [authzid] NUL user NUL
// password, checked against the listener's JAAS users.
type plainExchange struct {
	users   map[string]security.Secret
	name    string
	claimer string
}

func (p *plainExchange) Step(token []byte) ([]byte, bool, error) {
	authzid, user, password, err := parsePlainToken(token)
	if err != nil {
		return nil, false, err
	}
	want, ok := p.users[user]
	if ok {
		p.claimer = user
	}
	// Compare even for an unknown user, so timing does not tell.
	match := subtle.ConstantTimeCompare([]byte(want.Value), []byte(password)) == 1
	if !ok || !match {
		return nil, false, errBadCredentials
	}
	if authzid != "" && authzid != user {
		return nil, false, errors.New("the client asked for an authorization id other than its user name")
	}
	p.name = user
	return []byte{}, true, nil
}

func (p *plainExchange) User() string    { return p.name }
func (p *plainExchange) Claimed() string { return p.claimer }

// parsePlainToken splits a PLAIN token into its three fields, refusing
// (as Apache does) a token with any other number, or an empty user name
// or password.
func parsePlainToken(token []byte) (authzid, user, password string, err error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("the PLAIN token has %d fields, not 3", len(parts))
	}
	if len(parts[1]) == 0 {
		return "", "", "", errors.New("the PLAIN token names no user")
	}
	if len(parts[2]) == 0 {
		return "", "", "", errors.New("the PLAIN token has no password")
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}

// scramExchange is RFC 5802 SCRAM through github.com/xdg-go/scram, with
// the stored keys of the metadata image.
type scramExchange struct {
	conv    *scram.ServerConversation
	claimer string
}

func newScramExchange(src ScramCredentialSource, hash scram.HashGeneratorFcn, mechanism int8) (Exchange, error) {
	if src == nil {
		return nil, errors.New("this node has no SCRAM credentials to check against")
	}
	e := &scramExchange{}
	lookup := func(user string) (scram.StoredCredentials, error) {
		rec, ok := src.ScramCredential(user, mechanism)
		if !ok {
			return scram.StoredCredentials{}, errBadCredentials
		}
		e.claimer = user
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(rec.Salt), Iters: int(rec.Iterations)},
			StoredKey:  rec.StoredKey, ServerKey: rec.ServerKey,
		}, nil
	}
	srv, err := hash.NewServer(lookup)
	if err != nil {
		return nil, err
	}
	e.conv = srv.NewConversation()
	return e, nil
}

func (e *scramExchange) Step(token []byte) ([]byte, bool, error) {
	answer, err := e.conv.Step(string(token))
	if err != nil {
		// The library's errors name no secret, but a wrong proof and an
		// unknown user must read alike.
		if e.conv.Done() || errors.Is(err, errBadCredentials) {
			return nil, false, errBadCredentials
		}
		return nil, false, fmt.Errorf("the SCRAM exchange failed: %v", err)
	}
	if !e.conv.Done() {
		return []byte(answer), false, nil
	}
	if !e.conv.Valid() {
		return nil, false, errBadCredentials
	}
	if z := e.conv.AuthzID(); z != "" && z != e.conv.Username() {
		return nil, false, errors.New("the client asked for an authorization id other than its user name")
	}
	return []byte(answer), true, nil
}

func (e *scramExchange) User() string    { return e.conv.Username() }
func (e *scramExchange) Claimed() string { return e.claimer }
