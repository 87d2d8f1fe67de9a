package kit

import (
	"fmt"
	"time"
)

// Spec describes a cluster to start. The zero Spec is one Apache Kafka
// DefaultVersion broker on a quorum of three kraftd controllers.
type Spec struct {
	// Brokers is how many Apache Kafka brokers to run (node ids 101, 102,
	// ...), each with one PLAINTEXT listener on 127.0.0.1. 0 means 1.
	Brokers int
	// KraftdControllers and ApacheControllers size the controller quorum
	// (node ids 1, 2, ...: kraftd's first, then Apache's). A static voter
	// set (controller.quorum.voters) holds them all. Both 0 means three
	// kraftd controllers.
	KraftdControllers int
	ApacheControllers int
	// Kafka is the Apache Kafka version of the brokers and of any Apache
	// controllers: a release of the lines 3.9 to 4.4 (Versions are tested).
	// "" means DefaultVersion. The quorum is formatted at that line's
	// newest metadata.version.
	Kafka string
	// BrokerConfig adds to or overrides the brokers' server.properties.
	BrokerConfig map[string]string
	// ControllerConfig adds to or overrides every controller's
	// server.properties, kraftd's and Apache's alike.
	ControllerConfig map[string]string
	// TLS makes every listener speak TLS (no client certificates asked):
	// the controllers' CONTROLLER listeners, which brokers and controllers
	// reach each other on, and the brokers' one listener, named SSL. The
	// kit makes a certificate authority and one certificate for 127.0.0.1
	// and localhost, valid for ten years, into Dir's tls directory (kept
	// with the Dir); a Go client dials with Cluster.TLSConfig, an Apache
	// client trusts Cluster.CAFile (ssl.truststore.type=PEM).
	TLS bool
	// SASL, if not "", makes every listener ask for SASL authentication
	// (SASL_PLAINTEXT, or SASL_SSL with TLS): the brokers' listener with
	// this mechanism, SASLPlain, SASLScramSHA256 or SASLScramSHA512, and
	// the controllers' CONTROLLER listeners with PLAIN. One user,
	// SASLUser, with a password the kit makes on the cluster's first run
	// and keeps in Dir (Cluster.SASL); a SCRAM credential is formatted into
	// the metadata, so it works from the first broker's start. A Go client
	// authenticates with Cluster.SASLMechanism, an Apache client with
	// Cluster.ClientProperties.
	SASL string
	// Dir keeps the cluster's data, configuration and logs. A Dir holding a
	// cluster from an earlier run is started again with its data, ports and
	// cluster id (the Spec must describe the same nodes). "" means a new
	// temporary directory, removed by Stop.
	Dir string
	// KraftdBinary is the kraftd program to run. "" means $KRAFTD_BINARY,
	// else kraftd built with `go build` from the module this package came
	// from (once per program, into the cache; a few seconds when up to date).
	KraftdBinary string
	// ReadyTimeout bounds Start's wait until a produce succeeds. 0 means
	// three minutes: JVMs start slowly on a loaded machine.
	ReadyTimeout time.Duration
	// Logf, if not nil, hears what the kit does: jar fetches and how long
	// they took, processes started and stopped.
	Logf func(format string, args ...any)
}

// withDefaults fills the zero fields and checks the rest.
func (s Spec) withDefaults() (Spec, error) {
	if s.Brokers == 0 {
		s.Brokers = 1
	}
	if s.KraftdControllers == 0 && s.ApacheControllers == 0 {
		s.KraftdControllers = 3
	}
	if s.Kafka == "" {
		s.Kafka = DefaultVersion
	}
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = 3 * time.Minute
	}
	if s.Logf == nil {
		s.Logf = func(string, ...any) {}
	}
	switch {
	case s.Brokers < 0 || s.Brokers > maxNodes:
		return s, fmt.Errorf("kit: Brokers=%d: want 1 to %d", s.Brokers, maxNodes)
	case s.KraftdControllers < 0 || s.ApacheControllers < 0 || s.KraftdControllers+s.ApacheControllers > maxControllers:
		return s, fmt.Errorf("kit: %d kraftd and %d Apache controllers: want 1 to %d in all", s.KraftdControllers, s.ApacheControllers, maxControllers)
	}
	if _, err := releaseLine(s.Kafka); err != nil {
		return s, err
	}
	return s, checkSASLMechanism(s.SASL)
}

// maxNodes and maxControllers bound a Spec: a kit cluster runs on one
// machine, and every broker is a JVM with a 512 MiB heap.
const (
	maxNodes       = 32
	maxControllers = 9
)

// brokerIDBase is the first broker's node id, apart from the controllers'.
const brokerIDBase = 101
