package server

import (
	"testing"

	"github.com/kraftd/kraftd/peer"
)

// usePeerSecurity gives p the TLS and SASL c's controller listener asks
// of a peer.
func usePeerSecurity(t *testing.T, p *peer.Client, c *Config) {
	t.Helper()
	handshake, mechanism, err := c.PeerSecurity()
	if err != nil {
		t.Fatal(err)
	}
	p.UseSecurity(handshake, mechanism)
}
