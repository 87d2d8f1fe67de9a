package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kraftd/kraftd/security"
	"github.com/kraftd/kraftd/security/sasl"
)

// The sasl.* keys of SASL listeners, and the peer client's, are read here
// into the settings package sasl takes.

const controllerMechanismKey = "sasl.mechanism.controller.protocol"

// saslListeners names the listeners mapped to SASL_PLAINTEXT or SASL_SSL,
// in listener order.
func (c *Config) saslListeners() []string {
	var out []string
	for _, l := range c.Listeners {
		if p := c.ListenerProtocols[l.Name]; p == "SASL_PLAINTEXT" || p == "SASL_SSL" {
			out = append(out, l.Name)
		}
	}
	return out
}

// jaasKey is the listener's JAAS key for a mechanism, as Apache reads it
// on a server: only under the listener prefix.
func jaasKey(listener, mechanism string) string {
	return "listener.name." + strings.ToLower(listener) + "." + strings.ToLower(mechanism) + ".sasl.jaas.config"
}

// saslSettings reads the sasl.* keys of SASL listener name.
func (p *parser) saslSettings(name string) *sasl.Settings {
	s := &sasl.Settings{Listener: name}
	key := "listener.name." + strings.ToLower(name) + ".sasl.enabled.mechanisms"
	if _, ok := p.props[key]; !ok {
		key = "sasl.enabled.mechanisms"
	}
	for _, m := range p.list(key) {
		m = strings.ToUpper(m)
		if !slices.Contains(sasl.Served, m) {
			p.setErr(key, fmt.Errorf("names %s; kraftd serves %s", m, strings.Join(sasl.Served, ", ")))
			return s
		}
		s.Mechanisms = append(s.Mechanisms, m)
	}
	if len(s.Mechanisms) == 0 {
		p.setErr(key, fmt.Errorf("is not set for SASL listener %s; Apache's default, GSSAPI, is not served by kraftd: "+
			"set it to one or more of %s", name, strings.Join(sasl.Served, ", ")))
		return s
	}
	s.MaxReauthMs = p.maxReauthMs(name, s.Mechanisms)
	for _, m := range s.Mechanisms {
		k := jaasKey(name, m)
		text := p.str(k, "")
		if text == "" {
			if m == sasl.Plain {
				p.setErr(k, fmt.Errorf("is required: PLAIN on listener %s takes its users from it", name))
			}
			continue
		}
		module, err := sasl.SingleJAASModule(text, sasl.LoginModule(m))
		if err != nil {
			p.setErr(k, err)
			continue
		}
		if m == sasl.Plain {
			s.PlainUsers = sasl.PlainUsers(module)
		}
	}
	return s
}

// saslClient reads how the peer client authenticates on SASL controller
// listener name. Apache's default mechanism is GSSAPI, which kraftd does
// not speak, so the key is required; the mechanism must be enabled on the
// listener, whose JAAS entry for it names the username and password.
func (p *parser) saslClient(name string, enabled []string) *sasl.Client {
	mech := strings.ToUpper(p.str(controllerMechanismKey, ""))
	switch {
	case mech == "":
		p.setErr(controllerMechanismKey, fmt.Errorf("is required when the controller listener %s is SASL: the peer client "+
			"authenticates with it, and Apache's default, GSSAPI, is not served", name))
		return nil
	case !slices.Contains(enabled, mech):
		p.setErr(controllerMechanismKey, fmt.Errorf("is %s, which the controller listener %s does not enable in sasl.enabled.mechanisms", mech, name))
		return nil
	}
	k := jaasKey(name, mech)
	module, err := sasl.SingleJAASModule(p.str(k, ""), sasl.LoginModule(mech))
	if err != nil {
		p.setErr(k, fmt.Errorf("must hold the peer client's username and password for %s: %w", mech, err))
		return nil
	}
	user := module.Options["username"]
	password, ok := module.Options["password"]
	if !ok || user == "" {
		p.setErr(k, errors.New("has no username and password options; the peer client authenticates with them"))
		return nil
	}
	return &sasl.Client{Mechanism: mech, User: user, Password: security.Secret{Value: password, Set: true}}
}

// errNoSASLListener is why an honoured sasl key stops start-up when no
// listener it could apply to is SASL.
var errNoSASLListener = errors.New("is a SASL setting, but no listener it applies to is mapped to SASL_PLAINTEXT or SASL_SSL " +
	"in listener.security.protocol.map; remove the key or map the listener to SASL_PLAINTEXT or SASL_SSL")

// honouredSASLKey reports whether key is a SASL key kraftd reads, and
// whether a SASL listener uses it.
func honouredSASLKey(key string, saslListeners []string) (applies, honoured bool) {
	if key == "sasl.enabled.mechanisms" || key == controllerMechanismKey || key == reauthKey {
		return len(saslListeners) > 0, true
	}
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return false, false
	}
	listener, sub, ok := strings.Cut(rest, ".")
	if !ok {
		return false, false
	}
	honoured = sub == "sasl.enabled.mechanisms" || isReauthKey(sub)
	for _, m := range sasl.Served {
		honoured = honoured || sub == strings.ToLower(m)+".sasl.jaas.config"
	}
	return honoured && slices.Contains(saslListeners, strings.ToUpper(listener)), honoured
}

// The keys of the bounds on failed logins (sasl.FailureLimits).
const (
	maxFailedPerAddressKey   = "kraftd.sasl.max.failed.authentications.per.address"
	maxFailedPerPrincipalKey = "kraftd.sasl.max.failed.authentications.per.principal"
)

// reauthKeys are the keys that may set connections.max.reauth.ms for
// mechanism on listener, most specific first.
func reauthKeys(listener, mechanism string) []string {
	prefix := "listener.name." + strings.ToLower(listener) + "."
	return []string{
		prefix + strings.ToLower(mechanism) + "." + reauthKey,
		prefix + reauthKey,
		reauthKey,
	}
}

const reauthKey = "connections.max.reauth.ms"

// maxReauthMs reads the session lifetime of each mechanism of listener.
func (p *parser) maxReauthMs(listener string, mechanisms []string) map[string]int64 {
	out := map[string]int64{}
	for _, m := range mechanisms {
		out[m] = 0
		found := false
		for _, k := range reauthKeys(listener, m) {
			if _, set := p.props[k]; set && !found {
				out[m], found = p.int64(k, 0, 0), true
			}
			p.used[k] = true
		}
	}
	return out
}

// isReauthKey reports whether sub (a key below listener.name.<l>.) sets
// connections.max.reauth.ms, for the listener or one of its mechanisms.
func isReauthKey(sub string) bool {
	if sub == reauthKey {
		return true
	}
	for _, m := range sasl.Served {
		if sub == strings.ToLower(m)+"."+reauthKey {
			return true
		}
	}
	return false
}
