// Package protocol owns the bytes-to-types boundary of the Kafka wire
// protocol: 4-byte size-prefixed frames, request headers v1 and v2, response
// headers v0 and v1 (ApiVersions always v0), the registry of supported API
// version ranges from which ApiVersions is derived, and Kafka error codes.
//
// Bodies are franz-go kmsg types; this package never re-implements them. It
// must never touch sockets, goroutines or clocks: it works on byte slices and
// io.Readers handed to it by the server.
package protocol
