package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SASL mechanisms kraftd serves.
const (
	mechPlain       = "PLAIN"
	mechScramSHA256 = "SCRAM-SHA-256"
	mechScramSHA512 = "SCRAM-SHA-512"
)

var servedMechanisms = []string{mechPlain, mechScramSHA256, mechScramSHA512}

// Login module classes a listener's sasl.jaas.config may name.
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// SASLSettings are one SASL_PLAINTEXT or SASL_SSL listener's sasl.* keys.
type SASLSettings struct {
	Listener string
	// Mechanisms is sasl.enabled.mechanisms (upper case, in the order given).
	Mechanisms []string
	// PlainUsers are the user_<name>="<password>" options of the PLAIN
	// login module: the users PLAIN accepts.
	PlainUsers map[string]Secret
	// Client is how the peer client authenticates to other controllers
	// on this listener; set on the first controller listener only.
	Client *SASLClient
	// MaxReauthMs is connections.max.reauth.ms by mechanism: the session
	// lifetime after which a connection must re-authenticate (KIP-368);
	// 0 for none. See sasl_reauth.go.
	MaxReauthMs map[string]int64
}

// SASLClient is sasl.mechanism.controller.protocol and the username and
// password options of that mechanism's JAAS entry on the controller
// listener, as an Apache controller's raft client reads them.
type SASLClient struct {
	Mechanism string
	User      string
	Password  Secret
}

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
func (p *parser) saslSettings(name string) *SASLSettings {
	s := &SASLSettings{Listener: name}
	key := "listener.name." + strings.ToLower(name) + ".sasl.enabled.mechanisms"
	if _, ok := p.props[key]; !ok {
		key = "sasl.enabled.mechanisms"
	}
	for _, m := range p.list(key) {
		m = strings.ToUpper(m)
		if !slices.Contains(servedMechanisms, m) {
			p.setErr(key, fmt.Errorf("names %s; kraftd serves %s", m, strings.Join(servedMechanisms, ", ")))
			return s
		}
		s.Mechanisms = append(s.Mechanisms, m)
	}
	if len(s.Mechanisms) == 0 {
		p.setErr(key, fmt.Errorf("is not set for SASL listener %s; Apache's default, GSSAPI, is not served by kraftd: "+
			"set it to one or more of %s", name, strings.Join(servedMechanisms, ", ")))
		return s
	}
	s.MaxReauthMs = p.maxReauthMs(name, s.Mechanisms)
	for _, m := range s.Mechanisms {
		class := scramLoginModule
		if m == mechPlain {
			class = plainLoginModule
		}
		k := jaasKey(name, m)
		text := p.str(k, "")
		if text == "" {
			if m == mechPlain {
				p.setErr(k, fmt.Errorf("is required: PLAIN on listener %s takes its users from it", name))
			}
			continue
		}
		module, err := singleJAASModule(text, class)
		if err != nil {
			p.setErr(k, err)
			continue
		}
		if m == mechPlain {
			s.PlainUsers = plainUsers(module)
		}
	}
	return s
}

// saslClient reads how the peer client authenticates on SASL controller
// listener name. Apache's default mechanism is GSSAPI, which kraftd does
// not speak, so the key is required; the mechanism must be enabled on the
// listener, whose JAAS entry for it names the username and password.
func (p *parser) saslClient(name string, enabled []string) *SASLClient {
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
	class := scramLoginModule
	if mech == mechPlain {
		class = plainLoginModule
	}
	module, err := singleJAASModule(p.str(k, ""), class)
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
	return &SASLClient{Mechanism: mech, User: user, Password: Secret{Value: password, Set: true}}
}

// singleJAASModule parses a listener's JAAS value, which Apache requires
// to hold exactly one login module, of the mechanism's class.
func singleJAASModule(text, class string) (jaasModule, error) {
	modules, err := parseJAAS(text)
	if err != nil {
		return jaasModule{}, err
	}
	if len(modules) != 1 {
		return jaasModule{}, fmt.Errorf("holds %d login modules; a listener's JAAS config holds exactly one", len(modules))
	}
	if modules[0].Class != class {
		return jaasModule{}, fmt.Errorf("names login module %s; this mechanism needs %s", modules[0].Class, class)
	}
	return modules[0], nil
}

func plainUsers(m jaasModule) map[string]Secret {
	users := map[string]Secret{}
	for k, v := range m.Options {
		if user, ok := strings.CutPrefix(k, "user_"); ok {
			users[user] = Secret{Value: v, Set: true}
		}
	}
	return users
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
	for _, m := range servedMechanisms {
		honoured = honoured || sub == strings.ToLower(m)+".sasl.jaas.config"
	}
	return honoured && slices.Contains(saslListeners, strings.ToUpper(listener)), honoured
}

// The keys of the bounds on failed logins (sasl_limits.go).
const (
	maxFailedPerAddressKey   = "kraftd.sasl.max.failed.authentications.per.address"
	maxFailedPerPrincipalKey = "kraftd.sasl.max.failed.authentications.per.principal"
)
