package sasl

import (
	"fmt"
	"strings"
	"time"

	"github.com/kraftd/kraftd/security"
)

// SASL mechanisms kraftd serves.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Served lists the mechanisms kraftd serves, in the order it names them.
var Served = []string{Plain, ScramSHA256, ScramSHA512}

// Login module classes a listener's sasl.jaas.config may name.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// LoginModule is the JAAS login module class of mechanism.
func LoginModule(mechanism string) string {
	if mechanism == Plain {
		return PlainLoginModule
	}
	return ScramLoginModule
}

// Settings are one SASL_PLAINTEXT or SASL_SSL listener's sasl.* keys, as
// the node's configuration parser read them.
type Settings struct {
	Listener string
	// Mechanisms is sasl.enabled.mechanisms (upper case, in the order given).
	Mechanisms []string
	// PlainUsers are the user_<name>="<password>" options of the PLAIN
	// login module: the users PLAIN accepts.
	PlainUsers map[string]security.Secret
	// Client is how the peer client authenticates to other controllers
	// on this listener; set on the first controller listener only.
	Client *Client
	// MaxReauthMs is connections.max.reauth.ms by mechanism: the session
	// lifetime after which a connection must re-authenticate (KIP-368);
	// 0 for none (ReauthLifetime).
	MaxReauthMs map[string]int64
}

// Client is sasl.mechanism.controller.protocol and the username and
// password options of that mechanism's JAAS entry on the controller
// listener, as an Apache controller's raft client reads them; or the
// same of a client of kraftd's own (`kraftd status`).
type Client struct {
	Mechanism string
	User      string
	Password  security.Secret
}

// SingleJAASModule parses a listener's JAAS value, which Apache requires
// to hold exactly one login module, of class. Errors never repeat an
// option's value.
func SingleJAASModule(text, class string) (JAASModule, error) {
	modules, err := parseJAAS(text)
	if err != nil {
		return JAASModule{}, err
	}
	if len(modules) != 1 {
		return JAASModule{}, fmt.Errorf("holds %d login modules; a listener's JAAS config holds exactly one", len(modules))
	}
	if modules[0].Class != class {
		return JAASModule{}, fmt.Errorf("names login module %s; this mechanism needs %s", modules[0].Class, class)
	}
	return modules[0], nil
}

// PlainUsers are the user_<name>="<password>" options of a PLAIN login
// module: the users PLAIN accepts.
func PlainUsers(m JAASModule) map[string]security.Secret {
	users := map[string]security.Secret{}
	for k, v := range m.Options {
		if user, ok := strings.CutPrefix(k, "user_"); ok {
			users[user] = security.Secret{Value: v, Set: true}
		}
	}
	return users
}

// ReauthLifetime is the session lifetime of mechanism on this listener
// (connections.max.reauth.ms for it), 0 for none.
func (s *Settings) ReauthLifetime(mechanism string) time.Duration {
	return time.Duration(s.MaxReauthMs[mechanism]) * time.Millisecond
}
