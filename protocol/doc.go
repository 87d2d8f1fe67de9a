// Package protocol owns the bytes-to-types boundary of the Kafka wire
// protocol, both ways: 4-byte size-prefixed frames (ReadFrame, with the
// size checked before the body is read), request headers v1 and v2 (parsed
// for the server, appended for the peer client), response headers v0 and
// v1 (ApiVersions always v0; appended for the server, parsed for the peer
// client), and the Registry of served API version ranges from which
// ApiVersions is derived.
//
// Bodies are franz-go kmsg types and error codes franz-go's kerr; this
// package re-implements neither. It must never touch sockets, goroutines
// or clocks: it works on byte slices and io.Readers handed to it by the
// server and the peer client.
package protocol
