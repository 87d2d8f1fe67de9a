package sasl

import (
	"fmt"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClientMechanism is franz-go's client side of c's mechanism: kraftd does
// not write its own SASL client either.
func ClientMechanism(c *Client) (kgosasl.Mechanism, error) {
	switch c.Mechanism {
	case Plain:
		return plain.Auth{User: c.User, Pass: c.Password.Value}.AsMechanism(), nil
	case ScramSHA256:
		return scram.Auth{User: c.User, Pass: c.Password.Value}.AsSha256Mechanism(), nil
	case ScramSHA512:
		return scram.Auth{User: c.User, Pass: c.Password.Value}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("mechanism %s is not served", c.Mechanism)
}
