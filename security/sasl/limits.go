package sasl

// Bounds on failed SASL authentications, beyond Apache,
// which has only the delay of connection.failed.authentication.delay.ms
// (and so lets 50 parallel clients try about 140 passwords a second).
//
// Each client address and each principal that exists (a PLAIN user of the
// listener's JAAS, a user with SCRAM credentials) has a token bucket of
// failures: it holds the configured number per minute, and refills at that
// rate. A failed attempt takes a token from its address's bucket and from
// its principal's. An attempt is refused, with SASL_AUTHENTICATION_FAILED
// saying why and before the credentials are checked, when its address's
// bucket is empty; and when its principal's bucket is empty and its
// address has failed recently (its bucket is not full). An address with no
// recent failure still reaches a principal whose bucket a guesser emptied,
// so no stranger can lock the quorum's own peers out by failing as their
// principal; a guesser spread over many addresses gets about one guess per
// fresh address per locked principal.
//
// Memory: only existing principals get a bucket, and addresses at most
// maxFailureBuckets (IPv6 addresses by their /64, as one host usually has
// the whole prefix). A full bucket says nothing, so full ones are dropped
// when the table is full; if none is, a new address is refused as if
// its bucket were empty.

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// maxFailureBuckets bounds the address table (about 100 bytes an entry).
const maxFailureBuckets = 1 << 16

// FailureLimits holds the buckets of one node; a nil *FailureLimits
// bounds nothing.
type FailureLimits struct {
	perAddress, perPrincipal float64 // failures a minute; 0 is unbounded
	now                      func() time.Time

	mu         sync.Mutex
	addresses  map[string]*failureBucket
	principals map[string]*failureBucket
	lastSweep  time.Time
}

type failureBucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// NewFailureLimits bounds failures a minute per address and per
// principal (0: unbounded).
func NewFailureLimits(perAddress, perPrincipal int) *FailureLimits {
	return &FailureLimits{perAddress: float64(perAddress), perPrincipal: float64(perPrincipal), now: time.Now,
		addresses: map[string]*failureBucket{}, principals: map[string]*failureBucket{}}
}

// AddressKey is the bucket key of a client address.
func AddressKey(remote net.Addr) string {
	tcp, ok := remote.(*net.TCPAddr)
	if !ok {
		return remote.String()
	}
	if tcp.IP.To4() == nil && len(tcp.IP) == net.IPv6len {
		return tcp.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return tcp.IP.String()
}

// level brings b up to now at rate per minute, up to capacity rate.
func level(b *failureBucket, rate float64, now time.Time) float64 {
	b.tokens = min(rate, b.tokens+now.Sub(b.at).Minutes()*rate)
	b.at = now
	return b.tokens
}

// refused says why an attempt from address as principal (empty when not
// yet known or not existing) must be refused, or "" when it may go on.
func (l *FailureLimits) refused(address, principal string) string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	rate := l.addressRate()
	addr, seen := l.addresses[address]
	tokens := rate
	if seen {
		tokens = level(addr, rate, now)
	}
	if l.perAddress > 0 && tokens < 1 {
		return fmt.Sprintf("too many failed authentications from %s (more than %.0f a minute); try again later", address, l.perAddress)
	}
	if rate > 0 && !seen && len(l.addresses) >= maxFailureBuckets && !l.sweep(now) {
		return fmt.Sprintf("failed authentications from more than %d client addresses in the last minute; try again later", maxFailureBuckets)
	}
	if principal == "" || l.perPrincipal == 0 {
		return ""
	}
	p, ok := l.principals[principal]
	// A principal's bound holds back only addresses that failed recently.
	if ok && level(p, l.perPrincipal, now) < 1 && tokens < rate {
		return fmt.Sprintf("too many failed authentications as %s (more than %.0f a minute); try again later", principal, l.perPrincipal)
	}
	return ""
}

// failed charges a failed attempt to address and, when it exists, to
// principal.
func (l *FailureLimits) failed(address, principal string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if rate := l.addressRate(); rate > 0 {
		charge(l.addresses, address, rate, now, maxFailureBuckets)
	}
	if l.perPrincipal > 0 && principal != "" {
		charge(l.principals, principal, l.perPrincipal, now, 0)
	}
}

// charge takes a token from key's bucket, creating it full unless the
// table holds limit buckets already (0: no limit).
func charge(table map[string]*failureBucket, key string, rate float64, now time.Time, limit int) {
	b, ok := table[key]
	if !ok {
		if limit > 0 && len(table) >= limit {
			return
		}
		b = &failureBucket{tokens: rate, at: now}
		table[key] = b
	}
	b.tokens = max(0, level(b, rate, now)-1)
}

// addressRate is the refill rate of address buckets: they are kept for
// the per-principal bound too (which spares addresses with no recent
// failure), at the per-address rate or else the per-principal one.
func (l *FailureLimits) addressRate() float64 {
	if l.perAddress > 0 {
		return l.perAddress
	}
	return l.perPrincipal
}

// sweep drops the address buckets that have refilled, at most once a
// second (a sweep walks the whole table), reporting whether there is room.
func (l *FailureLimits) sweep(now time.Time) bool {
	if now.Sub(l.lastSweep) >= time.Second {
		l.lastSweep = now
		rate := l.addressRate()
		for k, b := range l.addresses {
			if level(b, rate, now) >= rate {
				delete(l.addresses, k)
			}
		}
	}
	return len(l.addresses) < maxFailureBuckets
}

// LimitError is an attempt refused by the bounds; Reason is worded for
// the client and the log.
type LimitError struct{ Reason string }

func (e *LimitError) Error() string { return e.Reason }

// Step passes token to ex for a client at address within the bounds: an
// attempt from an address, or as a principal, over its bound is refused
// (a *LimitError) before the credentials are checked, or (when the
// principal shows only in this token) its outcome is dropped, so a
// refusal says nothing of the password.
func (l *FailureLimits) Step(address string, ex Exchange, token []byte) ([]byte, bool, error) {
	if why := l.refused(address, ex.Claimed()); why != "" {
		l.failed(address, "")
		return nil, false, &LimitError{why}
	}
	answer, done, err := ex.Step(token)
	user := ex.Claimed()
	if err != nil || done {
		if why := l.refused(address, user); why != "" {
			l.failed(address, "")
			return nil, false, &LimitError{why}
		}
	}
	if err != nil {
		l.failed(address, user)
	}
	return answer, done, err
}

// Buckets counts the address and principal buckets held, for tests and
// the curious: memory held for failures.
func (l *FailureLimits) Buckets() (addresses, principals int) {
	if l == nil {
		return 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addresses), len(l.principals)
}
