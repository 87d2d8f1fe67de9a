package server

import (
	"errors"
	"net"
	"strconv"
	"time"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/kraftd/kraftd/security/sasl"
	kraftdtls "github.com/kraftd/kraftd/security/tls"
)

// QuorumTargets reads the controllers a node of any role (controller or
// broker, kraftd's or Apache's file) reaches its quorum by:
// controller.quorum.voters as id@host:port, else
// controller.quorum.bootstrap.servers as host:port with no id (-1). An
// error names the key (a *ConfigError).
func QuorumTargets(props map[string]string) (ids []int32, addrs []string, err error) {
	p := parser{props: props, used: map[string]bool{}}
	for _, v := range p.voters("controller.quorum.voters") {
		ids, addrs = append(ids, v.ID), append(addrs, net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port))))
	}
	if len(ids) == 0 {
		for _, s := range p.list("controller.quorum.bootstrap.servers") {
			if _, _, err := SplitHostPort(s); err != nil {
				p.setErr("controller.quorum.bootstrap.servers", err)
			}
			ids, addrs = append(ids, -1), append(addrs, s)
		}
	}
	if p.err == nil && len(addrs) == 0 {
		p.setErr("controller.quorum.voters", errors.New("is not set, nor is controller.quorum.bootstrap.servers: the file names no controller"))
	}
	return ids, addrs, p.err
}

// ControllerClientSecurity is how this node's peer client reaches the
// controller listener (its TLS and sasl.mechanism.controller.protocol
// login): what a tool run with the node's own file connects with. LoadTLS
// must have loaded the stores.
func (c *Config) ControllerClientSecurity() (*ClientSecurity, error) {
	name := c.ControllerListenerName[0]
	cs := &ClientSecurity{Protocol: c.ListenerProtocols[name]}
	m, isTLS, err := c.listenerTLS(name)
	if err != nil {
		return nil, err
	}
	if isTLS {
		cs.TLS = m.ClientConfig("")
	}
	if s := c.SASL[name]; s != nil && s.Client != nil {
		if cs.SASL, err = sasl.ClientMechanism(s.Client); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// PeerSecurity is how this node's peer client (package peer) reaches the
// controller listener: the TLS handshake over a dialed connection, with
// the listener's keystore and truststore as they are at each connection
// (nil for a listener without TLS), and the SASL mechanism of
// sasl.mechanism.controller.protocol (nil without SASL). LoadTLS must have
// loaded the stores.
func (c *Config) PeerSecurity() (handshake func(conn net.Conn, addr string, timeout time.Duration) (net.Conn, error), mechanism kgosasl.Mechanism, err error) {
	name := c.ControllerListenerName[0]
	m, isTLS, err := c.listenerTLS(name)
	if err != nil {
		return nil, nil, err
	}
	if isTLS {
		handshake = func(conn net.Conn, addr string, timeout time.Duration) (net.Conn, error) {
			return kraftdtls.Dial(conn, m.ClientConfig(addr), timeout)
		}
	}
	if s := c.SASL[name]; s != nil && s.Client != nil {
		if mechanism, err = sasl.ClientMechanism(s.Client); err != nil {
			return nil, nil, err
		}
	}
	return handshake, mechanism, nil
}
