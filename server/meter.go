package server

import "time"

// Meter is told what the server served, for the process's metrics (package
// metrics implements it); a Server without one measures nothing. Methods
// are called from connection goroutines and must not block.
type Meter interface {
	// Connection: a connection to listener finished its set-up with
	// outcome: ConnAccepted, ConnRefused (a connection limit),
	// ConnTLSFailed (the handshake, or no principal for the client's
	// certificate) or ConnSASLFailed.
	Connection(listener, outcome string)
	// ConnectionClosed: a connection counted ConnAccepted closed.
	ConnectionClosed(listener string)
	// Request: a request with API key was answered after d; failed means
	// its handler failed, so the connection closes instead.
	Request(listener string, key int16, d time.Duration, failed bool)
	// Reauthentication: an authenticated SASL connection on listener
	// re-authenticated (KIP-368) with outcome ReauthSucceeded or
	// ReauthFailed (it closes), or was closed as ReauthExpired: it sent a
	// request after its session ended.
	Reauthentication(listener, outcome string)
}

// Connection outcomes a Meter is told of.
const (
	ConnAccepted   = "accepted"
	ConnRefused    = "refused"
	ConnTLSFailed  = "tls_failed"
	ConnSASLFailed = "sasl_failed"
)

// Re-authentication outcomes a Meter is told of.
const (
	ReauthSucceeded = "succeeded"
	ReauthFailed    = "failed"
	ReauthExpired   = "expired"
)

// SetMeter makes m measure this server; call it before Listen.
func (s *Server) SetMeter(m Meter) { s.meter = m }

func (s *Server) countConnection(listener, outcome string) {
	if s.meter != nil {
		s.meter.Connection(listener, outcome)
	}
}

func (s *Server) countReauthentication(listener, outcome string) {
	if s.meter != nil {
		s.meter.Reauthentication(listener, outcome)
	}
}
