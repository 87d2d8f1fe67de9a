package controller

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

func newTokenController(t *testing.T, secret string) (*Controller, *fakeQuorum, *clock) {
	t.Helper()
	c := New(1, nil)
	q := newFakeQuorum(t, c)
	clk := &clock{now: time.UnixMilli(1_000_000)}
	q.activate(clk, Settings{NodeID: 1, ClusterID: testCluster, Rand: rand.New(rand.NewPCG(1, 2)), TopicIDs: rand.NewChaCha8([32]byte{1}),
		Tokens: TokenSettings{Secret: secret, MaxLifetime: 10 * time.Hour, Expiry: time.Hour, CheckEvery: time.Minute}})
	q.write([]metadata.Record{&metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: LatestMetadataVersion}})
	return c, q, clk
}

func tokenCount(c *Controller) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.image.DelegationTokens)
}

// A token's life as DelegationTokenControlManager runs it: created with
// the default lifetimes and a password that is the HMAC of its id, renewed
// by a renewer and refused to anyone else, expired, swept once lapsed.
func TestDelegationTokenLifecycle(t *testing.T) {
	ctx := context.Background()
	c, q, clk := newTokenController(t, "the-secret")
	alice := TokenPrincipal{Type: "User", Name: "alice", Allowed: true}
	bob := TokenPrincipal{Type: "User", Name: "bob", Allowed: true}
	eve := TokenPrincipal{Type: "User", Name: "eve", Allowed: true}

	create := kmsg.NewPtrCreateDelegationTokenRequest()
	create.SetVersion(3)
	create.Renewers = []kmsg.CreateDelegationTokenRequestRenewer{{PrincipalType: "User", PrincipalName: "bob"}}
	created, err := c.CreateDelegationToken(ctx, alice, create)
	if err != nil || created.ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, created)
	}
	now := clk.now.UnixMilli()
	if created.IssueTimestamp != now || created.ExpiryTimestamp != now+3600_000 || created.MaxTimestamp != now+36000_000 {
		t.Errorf("timestamps issue %d expiry %d max %d, now %d", created.IssueTimestamp, created.ExpiryTimestamp, created.MaxTimestamp, now)
	}
	if string(created.HMAC) != string(tokenHMAC("the-secret", created.TokenID)) || created.PrincipalName != "alice" || created.TokenRequesterPrincipalName != "alice" {
		t.Errorf("created %+v", created)
	}

	renew := func(p TokenPrincipal, mac []byte, period int64) *kmsg.RenewDelegationTokenResponse {
		req := kmsg.NewPtrRenewDelegationTokenRequest()
		req.HMAC, req.RenewTimeMillis = mac, period
		resp, err := c.RenewDelegationToken(ctx, p, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	clk.now = clk.now.Add(30 * time.Minute)
	if r := renew(bob, created.HMAC, 600_000); r.ErrorCode != 0 || r.ExpiryTimestamp != clk.now.UnixMilli()+600_000 {
		t.Errorf("bob renews: %+v", r)
	}
	if r := renew(eve, created.HMAC, 0); r.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Errorf("eve renews: %+v", r)
	}
	if r := renew(alice, []byte("not a token"), 0); r.ErrorCode != kerr.DelegationTokenNotFound.Code {
		t.Errorf("unknown HMAC: %+v", r)
	}
	if r := renew(TokenPrincipal{Type: "User", Name: "alice"}, created.HMAC, 0); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Errorf("a request not allowed (PLAINTEXT): %+v", r)
	}

	expire := kmsg.NewPtrExpireDelegationTokenRequest()
	expire.HMAC, expire.ExpiryPeriodMillis = created.HMAC, 60_000
	if r, err := c.ExpireDelegationToken(ctx, alice, expire); err != nil || r.ExpiryTimestamp != clk.now.UnixMilli()+60_000 {
		t.Errorf("expire in a minute: %v %+v", err, r)
	}
	clk.now = clk.now.Add(2 * time.Minute)
	if r := renew(alice, created.HMAC, 0); r.ErrorCode != kerr.DelegationTokenExpired.Code {
		t.Errorf("renewing a lapsed token: %+v", r)
	}
	if n := tokenCount(c); n != 1 {
		t.Fatalf("%d tokens before the sweep", n)
	}
	q.tick()
	// The sweep the tick proposed is built before the renewal below, and
	// answers come in log order: once the renewal is answered, the sweep
	// has committed, and the token is gone.
	if r := renew(alice, created.HMAC, 0); r.ErrorCode != kerr.DelegationTokenNotFound.Code {
		t.Errorf("renewing a swept token: %+v", r)
	}
	if n := tokenCount(c); n != 0 {
		t.Errorf("the lapsed token was not swept: %d left", n)
	}

	// A token for another owner names the requester; a renewer that is not
	// a User is refused; a negative period removes the token at once.
	create.OwnerPrincipalType, create.OwnerPrincipalName = kmsg.StringPtr("User"), kmsg.StringPtr("carol")
	created, _ = c.CreateDelegationToken(ctx, alice, create)
	if created.ErrorCode != 0 || created.PrincipalName != "carol" || created.TokenRequesterPrincipalName != "alice" {
		t.Errorf("token for carol: %+v", created)
	}
	expire.HMAC, expire.ExpiryPeriodMillis = created.HMAC, -1
	if r, _ := c.ExpireDelegationToken(ctx, TokenPrincipal{Type: "User", Name: "carol", Allowed: true}, expire); r.ErrorCode != 0 || tokenCount(c) != 0 {
		t.Errorf("expire now: %+v, %d tokens", r, tokenCount(c))
	}
	create.Renewers = []kmsg.CreateDelegationTokenRequestRenewer{{PrincipalType: "Group", PrincipalName: "ops"}}
	if r, _ := c.CreateDelegationToken(ctx, alice, create); r.ErrorCode != kerr.InvalidPrincipalType.Code {
		t.Errorf("a Group renewer: %+v", r)
	}
}

// Without delegation.token.secret.key tokens are disabled.
func TestDelegationTokensDisabledWithoutSecret(t *testing.T) {
	c, _, _ := newTokenController(t, "")
	r, err := c.CreateDelegationToken(context.Background(), TokenPrincipal{Type: "User", Name: "alice", Allowed: true}, kmsg.NewPtrCreateDelegationTokenRequest())
	if err != nil || r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Errorf("%v %+v", err, r)
	}
}
