package kit

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The SASL mechanisms Spec.SASL may name for the brokers' listener.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASLUser is the one user of a SASL cluster: clients, the brokers among
// themselves and towards the controllers, and the controllers among
// themselves all authenticate as it, with the password Cluster.SASL gives.
const SASLUser = "kit"

// controllerMechanism is what every CONTROLLER listener of a SASL cluster
// takes, whatever the brokers' listener takes: Apache's controllers read
// SCRAM credentials only from the committed metadata, so they could not
// check each other's first votes with SCRAM; PLAIN's users live in the
// listener's JAAS entry.
const controllerMechanism = SASLPlain

func checkSASLMechanism(m string) error {
	switch m {
	case "", SASLPlain, SASLScramSHA256, SASLScramSHA512:
		return nil
	}
	return fmt.Errorf("kit: SASL mechanism %q: want %s, %s or %s", m, SASLPlain, SASLScramSHA256, SASLScramSHA512)
}

// newSASLPassword is a random password made of characters that need no
// quoting in a JAAS entry nor in an --add-scram argument.
func newSASLPassword() string {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return strings.NewReplacer("-", "a", "_", "b").Replace(base64.RawURLEncoding.EncodeToString(b[:]))
}

// SASL is the mechanism the brokers' listener takes and SASLUser's
// password; all "" without SASL.
func (c *Cluster) SASL() (mechanism, password string) {
	return c.spec.SASL, c.layout.SASLPassword
}

// SASLMechanism is what a franz-go client authenticates with
// (kgo.SASL(c.SASLMechanism())); nil without SASL.
func (c *Cluster) SASLMechanism() sasl.Mechanism {
	pass := c.layout.SASLPassword
	switch c.spec.SASL {
	case SASLPlain:
		return plain.Auth{User: SASLUser, Pass: pass}.AsMechanism()
	case SASLScramSHA256:
		return scram.Auth{User: SASLUser, Pass: pass}.AsSha256Mechanism()
	case SASLScramSHA512:
		return scram.Auth{User: SASLUser, Pass: pass}.AsSha512Mechanism()
	}
	return nil
}

// ClientProperties are an Apache client's entries (a tool's
// --command-config) for reaching the brokers: security.protocol, and the
// SASL login and trusted CA where the cluster has them.
func (c *Cluster) ClientProperties() map[string]string {
	props := map[string]string{"security.protocol": c.brokerProtocol()}
	if c.spec.TLS {
		props["ssl.truststore.type"] = "PEM"
		props["ssl.truststore.location"] = c.CAFile()
	}
	if m := c.spec.SASL; m != "" {
		props["sasl.mechanism"] = m
		props["sasl.jaas.config"] = jaasLogin(m, c.layout.SASLPassword, false)
	}
	return props
}

// brokerProtocol is the security protocol of the brokers' listener, which
// is also its name, and of the CONTROLLER listeners.
func (c *Cluster) brokerProtocol() string {
	switch {
	case c.spec.SASL != "" && c.spec.TLS:
		return "SASL_SSL"
	case c.spec.SASL != "":
		return "SASL_PLAINTEXT"
	case c.spec.TLS:
		return "SSL"
	}
	return "PLAINTEXT"
}

// jaasLogin is a JAAS entry logging in as SASLUser with mechanism m; with
// serves, a PLAIN entry also holds the users the listener accepts.
func jaasLogin(m, password string, serves bool) string {
	module := "org.apache.kafka.common.security.scram.ScramLoginModule"
	if m == SASLPlain {
		module = "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	entry := fmt.Sprintf(`%s required username="%s" password="%s"`, module, SASLUser, password)
	if serves && m == SASLPlain {
		entry += fmt.Sprintf(` user_%s="%s"`, SASLUser, password)
	}
	return entry + ";"
}

// saslProps are the SASL entries of node n's server.properties: its
// CONTROLLER listener (served by a controller, dialed by everyone) and a
// broker's own listener, which the brokers also reach each other on.
func (c *Cluster) saslProps(n *Node) map[string]string {
	m, pass := c.spec.SASL, c.layout.SASLPassword
	if m == "" {
		return nil
	}
	props := map[string]string{
		"sasl.mechanism.controller.protocol":              controllerMechanism,
		"listener.name.controller.plain.sasl.jaas.config": jaasLogin(controllerMechanism, pass, n.isController()),
	}
	if n.isController() {
		props["listener.name.controller.sasl.enabled.mechanisms"] = controllerMechanism
		return props
	}
	listener := strings.ToLower(c.brokerProtocol())
	props["sasl.mechanism.inter.broker.protocol"] = m
	props["listener.name."+listener+".sasl.enabled.mechanisms"] = m
	props["listener.name."+listener+"."+strings.ToLower(m)+".sasl.jaas.config"] = jaasLogin(m, pass, true)
	return props
}

// scramFormatArgs are the --add-scram arguments a controller's format
// takes so that SASLUser's SCRAM credential is in the metadata from the
// first broker's start (kraftd's format and Apache's storage tool both
// read them).
func (c *Cluster) scramFormatArgs() []string {
	if m := c.spec.SASL; m == SASLScramSHA256 || m == SASLScramSHA512 {
		return []string{"--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", m, SASLUser, c.layout.SASLPassword)}
	}
	return nil
}
