// Package sasl owns what kraftd knows of SASL apart from the wire: the
// rules of an exchange (Conversation: which request may come when, as
// Apache's SaslServerAuthenticator has it, and what a failed
// SaslAuthenticate answers, including a re-authentication's, KIP-368),
// the sessions it proves, the mechanisms kraftd serves (PLAIN against a
// listener's JAAS users, SCRAM-SHA-256 and -512 against the metadata
// image's stored keys), the JAAS syntax of sasl.jaas.config, a listener's
// SASL settings, the bounds on failed logins per client address and per
// principal, and the client side of a mechanism for the peer client and
// `kraftd status`.
//
// Package server runs a Conversation on a connection: it reads and
// decodes each request, asks the Conversation, and writes the answers
// (holding a failure's for connection.failed.authentication.delay.ms).
// This package must never touch a socket, read a frame or encode an
// answer, and never decide what a principal may do; its errors name no
// credential.
package sasl
