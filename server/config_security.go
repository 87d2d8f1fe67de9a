package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kraftd/kraftd/security"
	kraftdtls "github.com/kraftd/kraftd/security/tls"
)

// errMoreSecurity is why a security key stops start-up. The key's value is
// never repeated: many of these keys hold passwords or JAAS secrets.
var errMoreSecurity = errors.New("asks for a SASL or TLS setting kraftd does not honour " +
	"(it serves PLAINTEXT, SSL and SASL with the ssl.* and sasl.* keys its docs/security.md lists); " +
	"remove the key, or run an Apache controller until kraftd supports it")

// errNoSSLListener is why an honoured ssl.* key stops start-up when no
// listener it could apply to is SSL: asking for TLS and getting plaintext
// must not pass quietly.
var errNoSSLListener = errors.New("is a TLS setting, but no listener it applies to is mapped to SSL or SASL_SSL " +
	"in listener.security.protocol.map; remove the key or map the listener to SSL or SASL_SSL")

// defaultPrincipalBuilder is Apache's default principal.builder.class; on
// a PLAINTEXT listener it makes every client ANONYMOUS, as kraftd does.
const defaultPrincipalBuilder = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"

// refuseSecurity returns a *ConfigError for the first key, in sorted
// order, that asks for more security than kraftd gives. Such a key used to
// be only warned about as unknown, and the controller then served
// everyone; an operator who asked for security must not get an open
// controller by accident. A key whose value asks for nothing beyond
// plaintext (empty, ssl.client.auth=none, security.inter.broker.protocol=PLAINTEXT) passes
// and is warned about as unused. The ssl.* keys kraftd honours (kraftdtls.HonouredKeys)
// pass when they apply to an SSL listener: at the top level when any
// listener is SSL, under listener.name.<l>. when l is.
func refuseSecurity(props map[string]string, sslListeners, saslListeners []string) error {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := strings.TrimSpace(props[k])
		if err := upperCaseListenerPrefix(k); err != nil {
			return err
		}
		if applies, honoured := honouredTLSKey(k, sslListeners); honoured {
			if !applies && asksForSecurity(k, v) {
				return &ConfigError{Key: k, Err: errNoSSLListener}
			}
			continue
		}
		if applies, honoured := honouredSASLKey(k, saslListeners); honoured {
			if !applies && asksForSecurity(k, v) {
				return &ConfigError{Key: k, Err: errNoSASLListener}
			}
			continue
		}
		if authorizerKeys[k] {
			continue // authorizerSettings reads them
		}
		if asksForSecurity(k, v) {
			return &ConfigError{Key: k, Err: errMoreSecurity}
		}
	}
	return nil
}

// upperCaseListenerPrefix refuses listener.name.CONTROLLER.ssl.*: Apache
// reads only the lower-case prefix and would ignore the key, so the
// setting would silently not apply.
func upperCaseListenerPrefix(key string) error {
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return nil
	}
	listener, sub, ok := strings.Cut(rest, ".")
	if !ok || listener == strings.ToLower(listener) || !(strings.HasPrefix(sub, "ssl.") || strings.Contains(sub, "sasl.")) {
		return nil
	}
	return &ConfigError{Key: key, Err: fmt.Errorf("names the listener in upper case; Apache (and kraftd) read listener.name.%s.%s", strings.ToLower(listener), sub)}
}

// honouredTLSKey reports whether key is one of kraftdtls.HonouredKeys, at the top level
// or under a listener prefix, and whether an SSL listener uses it.
func honouredTLSKey(key string, sslListeners []string) (applies, honoured bool) {
	if slices.Contains(kraftdtls.HonouredKeys, key) {
		return len(sslListeners) > 0, true
	}
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return false, false
	}
	listener, sub, ok := strings.Cut(rest, ".")
	if !ok || !slices.Contains(kraftdtls.HonouredKeys, sub) {
		return false, false
	}
	return slices.Contains(sslListeners, strings.ToUpper(listener)), true
}

func asksForSecurity(key, value string) bool {
	if value == "" {
		return false
	}
	switch key {
	case "security.inter.broker.protocol":
		return !strings.EqualFold(value, "PLAINTEXT")
	case "ssl.client.auth":
		return !strings.EqualFold(value, "none")
	case "principal.builder.class":
		return value != defaultPrincipalBuilder
	case reauthKey:
		// Honoured on SASL listeners; elsewhere a non-zero value asks for
		// re-authentication that nothing would do.
		return value != "0"
	}
	if strings.HasSuffix(key, "."+reauthKey) && !strings.HasPrefix(key, "listener.name.") {
		return value != "0"
	}
	if strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl.") {
		return true
	}
	// Per-listener overrides: listener.name.<listener>.<key>, where a SASL
	// key may also carry a mechanism (listener.name.x.plain.sasl.jaas.config).
	if rest, ok := strings.CutPrefix(key, "listener.name."); ok {
		if _, sub, ok := strings.Cut(rest, "."); ok {
			return asksForSecurity(sub, value) || strings.Contains(sub, ".sasl.")
		}
	}
	return false
}

// keyConfigError makes a *security.KeyError (what packages security/tls
// and security/sasl return) a *ConfigError, which start-up refuses
// naming the key (exit 2); the text is the same.
func keyConfigError(err error) error {
	var ke *security.KeyError
	if errors.As(err, &ke) {
		return &ConfigError{Key: ke.Key, Err: ke.Err}
	}
	return err
}
