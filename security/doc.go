// Package security holds what kraftd's TLS and SASL packages share: who a
// connection is (Principal, and the ssl.principal.mapping.rules that turn
// a client certificate's distinguished name into one), a secret that never
// prints, and the error that names the configuration key to fix.
//
// Its subpackages do the work: security/tls (package kraftdtls) owns key
// and trust stores and TLS handshakes, security/sasl the rules of a SASL
// exchange, its mechanisms and the bounds on failed logins. Package server, the wire, imports them;
// they never import server.
//
// It must never decide what a principal may do (package authz does), and
// never touch a socket or a file.
package security

import "fmt"

// Secret is a password or key; String never shows it.
type Secret struct {
	Value string
	Set   bool
}

func (s Secret) String() string { return "[hidden]" }

// KeyError names the configuration key an operator must fix. Its text is
// the configuration error's ("config <key>: <reason>"), so the node can
// report it unchanged, with exit code 2.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return fmt.Sprintf("config %s: %v", e.Key, e.Err) }

func (e *KeyError) Unwrap() error { return e.Err }
