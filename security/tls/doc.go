// Package kraftdtls owns kraftd's TLS: an SSL listener's settings (the
// ssl.* keys, as the node's configuration parser read them), its keystore
// and truststore in every format Apache reads (PKCS12, JKS, PEM with an
// encrypted PKCS#8 key), read again when a store file is replaced on
// disk, and the handshakes: the server side, which names the client's
// principal from its certificate, the peer client's side, and the
// configuration of a client of kraftd's own (`kraftd status`).
//
// It is named kraftdtls, in directory security/tls, so that it never
// shadows crypto/tls in the files that use both.
//
// It must never decide what a principal may do (package authz does), and
// never read a Kafka request: a connection leaves it with its handshake
// done and nothing of the protocol read. Its errors name the key to fix
// (*security.KeyError) and never a password.
package kraftdtls
