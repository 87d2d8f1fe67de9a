package authz

import (
	"fmt"
	"testing"
)

// BenchmarkAuthorize is one decision with 100,000 ACLs: literal topic
// grants, prefixed grants of five lengths, and a wildcard.
func BenchmarkAuthorize(b *testing.B) {
	x := NewIndex()
	for i := range 90_000 {
		x.Apply(record(i, allow(fmt.Sprintf("User:u%d", i%1000), OpRead, ResourceTopic, fmt.Sprintf("topic-%d", i), PatternLiteral)))
	}
	for i := range 10_000 {
		x.Apply(record(90_000+i, allow(fmt.Sprintf("User:u%d", i%1000), OpWrite, ResourceTopic, fmt.Sprintf("team-%d-", i), PatternPrefixed)))
	}
	x.Apply(record(200_000, allow("User:auditor", OpDescribe, ResourceTopic, Wildcard, PatternLiteral)))
	a := New(x, nil, false)
	acts := make([]Action, 1024)
	for i := range acts {
		acts[i] = Action{fmt.Sprintf("User:u%d", i%1000), "127.0.0.1", OpRead, ResourceTopic, fmt.Sprintf("topic-%d", i*37)}
	}
	b.ResetTimer()
	for i := range b.N {
		a.Authorize(acts[i%len(acts)])
	}
	if x.Len() != 100_001 {
		b.Fatalf("%d ACLs", x.Len())
	}
}
