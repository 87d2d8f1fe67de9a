package controller

import (
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// Delegation tokens, as Apache's DelegationTokenControlManager keeps them.
// A token's password is HMAC-SHA512(delegation.token.secret.key, token id);
// the records carry everything but the password, which every broker
// derives from the same secret. So a token is found by its HMAC: the one
// whose id hashes to it. Owners and renewers are principals written
// "Type:Name"; only User principals renew. Tokens past their expiry or
// their maximum lifetime are removed by the active controller every
// Settings.TokenExpiryCheck.

// TokenSettings are the delegation.token.* keys; tokens are disabled (every
// request answered DELEGATION_TOKEN_AUTH_DISABLED) without a secret.
type TokenSettings struct {
	Secret      string        // delegation.token.secret.key
	MaxLifetime time.Duration // delegation.token.max.lifetime.ms (7 days)
	Expiry      time.Duration // delegation.token.expiry.time.ms (1 day)
	CheckEvery  time.Duration // delegation.token.expiry.check.interval.ms (1 hour)
}

func (s TokenSettings) withDefaults() TokenSettings {
	if s.MaxLifetime <= 0 {
		s.MaxLifetime = 7 * 24 * time.Hour
	}
	if s.Expiry <= 0 {
		s.Expiry = 24 * time.Hour
	}
	if s.CheckEvery <= 0 {
		s.CheckEvery = time.Hour
	}
	return s
}

// TokenPrincipal is the principal a token request speaks for (the client's,
// forwarded by a broker) and whether the request may touch tokens at all:
// Apache refuses token requests from a token-authenticated principal, and,
// unless forwarded, from PLAINTEXT and unauthenticated TLS connections.
type TokenPrincipal struct {
	Type, Name string
	Allowed    bool
}

func (p TokenPrincipal) String() string { return p.Type + ":" + p.Name }

// maxTokenRecordsPerSweep bounds one expiry sweep, as Apache's does.
const maxTokenRecordsPerSweep = 1000

func tokenHMAC(secret, tokenID string) []byte {
	m := hmac.New(sha512.New, []byte(secret))
	m.Write([]byte(tokenID))
	return m.Sum(nil)
}

// tokenByHMAC finds the token whose password is mac.
func tokenByHMAC(im *metadata.Image, secret string, mac []byte) (metadata.DelegationTokenRecord, bool) {
	for _, id := range slices.Sorted(maps.Keys(im.DelegationTokens)) {
		if hmac.Equal(tokenHMAC(secret, id), mac) {
			return im.DelegationTokens[id], true
		}
	}
	return metadata.DelegationTokenRecord{}, false
}

func mayRenew(tok metadata.DelegationTokenRecord, p TokenPrincipal) bool {
	return tok.Owner == p.String() || slices.Contains(tok.Renewers, p.String())
}

// saturatingAdd is now+d in milliseconds, capped at MaxInt64.
func saturatingAdd(nowMs, d int64) int64 {
	if nowMs > math.MaxInt64-d {
		return math.MaxInt64
	}
	return nowMs + d
}

// tokenRefusal is the check every token operation starts with.
func (c *Core) tokenRefusal(im *metadata.Image) int16 {
	switch {
	case c.settings.Tokens.Secret == "":
		return kerr.DelegationTokenAuthDisabled.Code
	case metadataVersion(im) < MVDelegationTokens:
		return kerr.UnsupportedVersion.Code
	}
	return 0
}

// CreateDelegationToken issues a token owned by the request's owner (the
// requester when none is named) and renewable by its User renewers.
func (c *Core) CreateDelegationToken(now time.Time, p TokenPrincipal, req *kmsg.CreateDelegationTokenRequest, answer func(*kmsg.CreateDelegationTokenResponse, error)) {
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	owner := TokenPrincipal{Type: p.Type, Name: p.Name}
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		owner = TokenPrincipal{Type: deref(req.OwnerPrincipalType), Name: *req.OwnerPrincipalName}
	}
	resp.PrincipalType, resp.PrincipalName = owner.Type, owner.Name
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = p.Type, p.Name
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		if !p.Allowed {
			resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
			return nil, nil
		}
		// Apache lets a requester create a token for another owner only
		// with CREATE_TOKENS on that user; that check is the authorizer's
		// (issue 15), and without one Apache allows it too.
		if resp.ErrorCode = c.tokenRefusal(im); resp.ErrorCode != 0 {
			return nil, nil
		}
		ts := c.settings.Tokens
		maxLife := ts.MaxLifetime.Milliseconds()
		if req.MaxLifetimeMillis > 0 {
			maxLife = min(maxLife, req.MaxLifetimeMillis)
		}
		nowMs := c.now.UnixMilli()
		maxTs := saturatingAdd(nowMs, maxLife)
		expiry := min(maxTs, saturatingAdd(nowMs, ts.Expiry.Milliseconds()))
		var renewers []string
		for _, r := range req.Renewers {
			if r.PrincipalType != "User" {
				resp.ErrorCode = kerr.InvalidPrincipalType.Code
				return nil, nil
			}
			renewers = append(renewers, r.PrincipalType+":"+r.PrincipalName)
		}
		id := metadata.Uuid(newTopicID(c.settings.TopicIDs)).String()
		resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = nowMs, expiry, maxTs
		resp.TokenID, resp.HMAC = id, tokenHMAC(ts.Secret, id)
		return []metadata.Record{&metadata.DelegationTokenRecord{Owner: owner.String(), Requester: p.String(), Renewers: renewers,
			IssueTimestamp: nowMs, MaxTimestamp: maxTs, ExpirationTimestamp: expiry, TokenId: id}}, nil
	}, func(_ written, err error) { answerResp(answer, resp, err) })
}

// tokenByRequest is what Renew and Expire check first, in Apache's order:
// token requests allowed to this principal, the metadata.version having
// tokens, and the token found by its HMAC.
func (c *Core) tokenByRequest(im *metadata.Image, p TokenPrincipal, hmac []byte) (metadata.DelegationTokenRecord, int16) {
	if !p.Allowed {
		return metadata.DelegationTokenRecord{}, kerr.DelegationTokenRequestNotAllowed.Code
	}
	if code := c.tokenRefusal(im); code != 0 {
		return metadata.DelegationTokenRecord{}, code
	}
	tok, ok := tokenByHMAC(im, c.settings.Tokens.Secret, hmac)
	if !ok {
		return tok, kerr.DelegationTokenNotFound.Code
	}
	return tok, 0
}

// refusedExpiry is the expiry timestamp Renew and Expire answer with when
// tokenByRequest refused: Apache's ERROR_TIMESTAMP (-1) for a request
// refused before the lookup, 0 for a token not found.
func refusedExpiry(code int16) int64 {
	if code == kerr.DelegationTokenNotFound.Code {
		return 0
	}
	return -1
}

// RenewDelegationToken moves a live token's expiry to now plus the renew
// period (at most delegation.token.expiry.time.ms, never past its maximum).
func (c *Core) RenewDelegationToken(now time.Time, p TokenPrincipal, req *kmsg.RenewDelegationTokenRequest, answer func(*kmsg.RenewDelegationTokenResponse, error)) {
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		tok, code := c.tokenByRequest(im, p, req.HMAC)
		if resp.ErrorCode = code; code != 0 {
			resp.ExpiryTimestamp = refusedExpiry(code)
			return nil, nil
		}
		nowMs := c.now.UnixMilli()
		switch {
		case tok.MaxTimestamp < nowMs || tok.ExpirationTimestamp < nowMs:
			resp.ErrorCode = kerr.DelegationTokenExpired.Code
		case !mayRenew(tok, p):
			resp.ErrorCode = kerr.DelegationTokenOwnerMismatch.Code
		}
		if resp.ErrorCode != 0 {
			return nil, nil
		}
		period := c.settings.Tokens.Expiry.Milliseconds()
		if req.RenewTimeMillis > 0 {
			period = min(period, req.RenewTimeMillis)
		}
		tok.ExpirationTimestamp = min(tok.MaxTimestamp, nowMs+period)
		resp.ExpiryTimestamp = tok.ExpirationTimestamp
		return []metadata.Record{&tok}, nil
	}, func(_ written, err error) { answerResp(answer, resp, err) })
}

// ExpireDelegationToken moves a token's expiry to now plus the period
// (never past its maximum), or removes it at once for a negative period.
func (c *Core) ExpireDelegationToken(now time.Time, p TokenPrincipal, req *kmsg.ExpireDelegationTokenRequest, answer func(*kmsg.ExpireDelegationTokenResponse, error)) {
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	c.exec(now, func(im *metadata.Image) ([]metadata.Record, error) {
		tok, code := c.tokenByRequest(im, p, req.HMAC)
		if resp.ErrorCode = code; code != 0 {
			resp.ExpiryTimestamp = refusedExpiry(code)
			return nil, nil
		}
		nowMs := c.now.UnixMilli()
		switch {
		case !mayRenew(tok, p):
			resp.ErrorCode = kerr.DelegationTokenOwnerMismatch.Code
		case req.ExpiryPeriodMillis < 0:
			resp.ExpiryTimestamp = nowMs
			return []metadata.Record{&metadata.RemoveDelegationTokenRecord{TokenId: tok.TokenId}}, nil
		case tok.MaxTimestamp < nowMs || tok.ExpirationTimestamp < nowMs:
			resp.ErrorCode = kerr.DelegationTokenExpired.Code
		}
		if resp.ErrorCode != 0 {
			return nil, nil
		}
		tok.ExpirationTimestamp = min(tok.MaxTimestamp, saturatingAdd(nowMs, req.ExpiryPeriodMillis))
		resp.ExpiryTimestamp = tok.ExpirationTimestamp
		return []metadata.Record{&tok}, nil
	}, func(_ written, err error) { answerResp(answer, resp, err) })
}

// SweepExpiredTokens removes up to maxTokenRecordsPerSweep tokens past
// their expiry or maximum lifetime and reports how many it removed.
func (c *Core) SweepExpiredTokens(now time.Time, answer func(int, error)) {
	removed := 0
	c.execFromImage(now, func(im *metadata.Image) ([]metadata.Record, error) {
		removed = 0
		nowMs := c.now.UnixMilli()
		var recs []metadata.Record
		for _, id := range slices.Sorted(maps.Keys(im.DelegationTokens)) {
			tok := im.DelegationTokens[id]
			if tok.MaxTimestamp < nowMs || tok.ExpirationTimestamp < nowMs {
				recs = append(recs, &metadata.RemoveDelegationTokenRecord{TokenId: id})
				if len(recs) >= maxTokenRecordsPerSweep {
					break
				}
			}
		}
		removed = len(recs)
		return recs, nil
	}, func(_ written, err error) { answer(removed, err) })
}

// sweepTokens is Tick's part: one sweep at a time, every CheckEvery.
func (c *Core) sweepTokens(now time.Time) {
	t := &c.timed
	if c.settings.Tokens.Secret == "" || t.sweeping || now.Before(t.nextSweep) {
		return
	}
	t.sweeping, t.nextSweep = true, now.Add(c.settings.Tokens.CheckEvery)
	c.SweepExpiredTokens(now, func(n int, err error) {
		t.sweeping = false
		if n > 0 || err != nil {
			c.report("tokens", n, err)
		}
	})
}

// CreateDelegationToken: see Core.CreateDelegationToken.
func (c *Controller) CreateDelegationToken(ctx context.Context, p TokenPrincipal, req *kmsg.CreateDelegationTokenRequest) (*kmsg.CreateDelegationTokenResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.CreateDelegationTokenResponse, error)) {
		core.CreateDelegationToken(now, p, req, answer)
	})
}

// RenewDelegationToken: see Core.RenewDelegationToken.
func (c *Controller) RenewDelegationToken(ctx context.Context, p TokenPrincipal, req *kmsg.RenewDelegationTokenRequest) (*kmsg.RenewDelegationTokenResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.RenewDelegationTokenResponse, error)) {
		core.RenewDelegationToken(now, p, req, answer)
	})
}

// ExpireDelegationToken: see Core.ExpireDelegationToken.
func (c *Controller) ExpireDelegationToken(ctx context.Context, p TokenPrincipal, req *kmsg.ExpireDelegationTokenRequest) (*kmsg.ExpireDelegationTokenResponse, error) {
	return await(ctx, c, func(core *Core, now time.Time, answer func(*kmsg.ExpireDelegationTokenResponse, error)) {
		core.ExpireDelegationToken(now, p, req, answer)
	})
}
