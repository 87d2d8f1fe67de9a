package sasl

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFailureLimitsTable checks the address table's bound: when it is
// full of buckets that have not refilled, a new address is refused rather
// than the table growing; once they refill, they make room.
func TestFailureLimitsTable(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewFailureLimits(2, 0)
	l.now = func() time.Time { return now }
	for i := range maxFailureBuckets {
		l.failed(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), "")
	}
	if why := l.refused("192.0.2.1", ""); !strings.Contains(why, "client addresses") {
		t.Fatalf("a new address with the table full: %q", why)
	}
	if len(l.addresses) > maxFailureBuckets {
		t.Fatalf("%d buckets", len(l.addresses))
	}
	now = now.Add(time.Minute)
	if why := l.refused("192.0.2.1", ""); why != "" {
		t.Fatalf("after the buckets refilled: %q", why)
	}
	if len(l.addresses) != 0 {
		t.Fatalf("%d refilled buckets kept", len(l.addresses))
	}
	if k := AddressKey(&net.TCPAddr{IP: net.ParseIP("2001:db8::1:2")}); k != "2001:db8::/64" {
		t.Fatalf("IPv6 key %q", k)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); l.failed("192.0.2.2", "p"); l.refused("192.0.2.2", "p") }()
	}
	wg.Wait()
}
