// Package sasl owns what kraftd knows of SASL apart from the wire: the
// mechanisms it serves (PLAIN against a listener's JAAS users, SCRAM-SHA-256
// and -512 against the metadata image's stored keys), the JAAS syntax of
// sasl.jaas.config, a listener's SASL settings and session lifetime
// (connections.max.reauth.ms), the bounds on failed logins per client
// address and per principal, and the client side of a mechanism for the
// peer client and `kraftd status`.
//
// Package server runs the exchange on a connection: it reads and decodes
// the SaslHandshake and SaslAuthenticate requests, calls an Exchange with
// each token, and writes the answers. This package must never touch a
// socket, read a frame or write an answer, and never decide what a
// principal may do; its errors name no credential.
package sasl
