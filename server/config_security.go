package server

import (
	"errors"
	"slices"
	"strings"
)

// errMoreSecurity is why a security key stops start-up. The key's value is
// never repeated: many of these keys hold passwords or JAAS secrets.
var errMoreSecurity = errors.New("asks for TLS, SASL or authorization, which kraftd does not provide yet " +
	"(it serves PLAINTEXT to everyone); remove the key, or run an Apache controller until kraftd supports it")

// defaultPrincipalBuilder is Apache's default principal.builder.class; on
// a PLAINTEXT listener it makes every client ANONYMOUS, as kraftd does.
const defaultPrincipalBuilder = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"

// refuseSecurity returns a *ConfigError for the first key, in sorted
// order, that asks for more security than kraftd gives. Such a key used to
// be only warned about as unknown, and the controller then served
// everyone; an operator who asked for security must not get an open
// controller by accident. A key whose value asks for nothing beyond
// plaintext (empty, allow.everyone.if.no.acl.found=true,
// ssl.client.auth=none, security.inter.broker.protocol=PLAINTEXT) passes
// and is warned about as unused.
func refuseSecurity(props map[string]string) error {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if asksForSecurity(k, strings.TrimSpace(props[k])) {
			return &ConfigError{Key: k, Err: errMoreSecurity}
		}
	}
	return nil
}

func asksForSecurity(key, value string) bool {
	if value == "" {
		return false
	}
	switch key {
	case "authorizer.class.name", "super.users":
		return true
	case "allow.everyone.if.no.acl.found":
		return !strings.EqualFold(value, "true")
	case "security.inter.broker.protocol":
		return !strings.EqualFold(value, "PLAINTEXT")
	case "ssl.client.auth":
		return !strings.EqualFold(value, "none")
	case "principal.builder.class":
		return value != defaultPrincipalBuilder
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
