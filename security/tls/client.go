package kraftdtls

import "crypto/tls"

// ClientConfig is the TLS configuration of a client of kraftd's own
// (`kraftd status`) with settings t read from Apache client properties:
// the truststore (none: the system's roots), the keystore if one is
// configured, the TLS versions and the host-name check. Its ServerName is
// empty: the client sets it to the host it dials. An error is a
// *security.KeyError.
func ClientConfig(t *Settings) (*tls.Config, error) {
	roots, err := loadTruststore(t)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{RootCAs: roots, MinVersion: t.MinVersion, MaxVersion: t.MaxVersion}
	if t.Keystore.Configured() {
		cert, err := loadKeystore(t)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{*cert}
	}
	if !t.VerifyHostname {
		verifyChainOnly(c)
	}
	return c, nil
}
