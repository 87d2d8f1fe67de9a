package server

import "time"

// TokenConfig is the delegation.token.* keys, read as Apache's
// DelegationTokenManagerConfigs defines them. Without a secret the
// controller answers every token request DELEGATION_TOKEN_AUTH_DISABLED.
// The secret must be the one the brokers have: they derive each token's
// password from it. It is never logged.
type TokenConfig struct {
	Secret              string
	MaxLifetime, Expiry time.Duration
	ExpiryCheck         time.Duration
}

func (p *parser) tokenConfig() TokenConfig {
	ms := func(key string) time.Duration { return time.Duration(p.long(key, 1)) * time.Millisecond }
	return TokenConfig{
		Secret:      p.str("delegation.token.secret.key", ""),
		MaxLifetime: ms("delegation.token.max.lifetime.ms"),
		Expiry:      ms("delegation.token.expiry.time.ms"),
		ExpiryCheck: ms("delegation.token.expiry.check.interval.ms"),
	}
}
