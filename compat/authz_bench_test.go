package compat

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/metadata"
)

// benchACLs is 100,000 ACLs shaped like a large cluster's: literal topic
// grants per user, prefixed topic grants, group grants, some DENYs, and a
// wildcard; benchActions asks about them (hits, misses, prefixes).
func benchACLs(rng *rand.Rand) []authz.ACL {
	acls := make([]authz.ACL, 0, 100_000)
	add := func(t authz.ResourceType, name string, pt authz.PatternType, p string, op authz.Operation, perm authz.Permission) {
		acls = append(acls, authz.ACL{ResourceType: t, ResourceName: name, PatternType: pt, Principal: p, Host: "*", Operation: op, Permission: perm})
	}
	for i := range 80_000 {
		add(authz.ResourceTopic, fmt.Sprintf("topic-%d", i), authz.PatternLiteral, fmt.Sprintf("User:u%d", i%1000), authz.OpRead, authz.PermissionAllow)
	}
	for i := range 10_000 {
		add(authz.ResourceTopic, fmt.Sprintf("team-%d-", i), authz.PatternPrefixed, fmt.Sprintf("User:u%d", i%1000), authz.OpWrite, authz.PermissionAllow)
	}
	for i := range 9_000 {
		add(authz.ResourceGroup, fmt.Sprintf("group-%d", i), authz.PatternLiteral, fmt.Sprintf("User:u%d", i%1000), authz.OpRead, authz.PermissionAllow)
	}
	for i := range 999 {
		add(authz.ResourceTopic, fmt.Sprintf("topic-%d", rng.IntN(80_000)), authz.PatternLiteral, fmt.Sprintf("User:u%d", i), authz.OpRead, authz.PermissionDeny)
	}
	add(authz.ResourceTopic, authz.Wildcard, authz.PatternLiteral, "User:auditor", authz.OpDescribe, authz.PermissionAllow)
	return acls
}

func benchActions(rng *rand.Rand, n int) []authz.Action {
	out := make([]authz.Action, n)
	for i := range out {
		// Mostly the owner of the resource asks (allowed), sometimes another
		// user or a resource no ACL names.
		n := rng.IntN(10_000)
		u := fmt.Sprintf("User:u%d", n%1000)
		if rng.IntN(5) == 0 {
			u = fmt.Sprintf("User:u%d", rng.IntN(1000))
		}
		switch rng.IntN(4) {
		case 0, 1:
			out[i] = authz.Action{Principal: u, Host: "127.0.0.1", Operation: authz.OpRead, ResourceType: authz.ResourceTopic, ResourceName: fmt.Sprintf("topic-%d", n+10_000*rng.IntN(9))}
		case 2:
			out[i] = authz.Action{Principal: u, Host: "127.0.0.1", Operation: authz.OpWrite, ResourceType: authz.ResourceTopic, ResourceName: fmt.Sprintf("team-%d-events-%d", n, i)}
		default:
			out[i] = authz.Action{Principal: u, Host: "127.0.0.1", Operation: authz.OpRead, ResourceType: authz.ResourceGroup, ResourceName: fmt.Sprintf("group-%d", n)}
		}
	}
	return out
}

// BenchmarkAuthorizerVsApache times one authorize() call with 100,000 ACLs
// loaded, kraftd's authz.Authorizer beside Apache 4.4.0's
// StandardAuthorizer called directly from a small Java harness
// (testdata/authzbench) on the same ACLs and actions, in the same run, and
// prints both p50/p99. Run with make bench (-benchtime 1x).
func BenchmarkAuthorizerVsApache(b *testing.B) {
	const version = "4.4.0"
	libs := filepath.Join(KafkaCache(b, version), "libs")
	rng := rand.New(rand.NewPCG(15, 15))
	acls := benchACLs(rng)
	actions := benchActions(rng, 20_000)

	idx := authz.NewIndex()
	for i, a := range acls {
		idx.Apply(&metadata.AccessControlEntryRecord{Id: metadata.Uuid{0: byte(i >> 16), 1: byte(i >> 8), 2: byte(i), 15: 1},
			ResourceType: int8(a.ResourceType), ResourceName: a.ResourceName, PatternType: int8(a.PatternType), Principal: a.Principal,
			Host: a.Host, Operation: int8(a.Operation), PermissionType: int8(a.Permission)})
	}
	az := authz.New(idx, []string{"User:admin"}, false)
	for range 5 {
		for _, act := range actions {
			az.Authorize(act)
		}
	}
	ns := make([]time.Duration, len(actions))
	allowed := 0
	for i, act := range actions {
		start := time.Now()
		d := az.Authorize(act)
		ns[i] = time.Since(start)
		if d.Allowed {
			allowed++
		}
	}
	slices.Sort(ns)
	kp50, kp99 := ns[len(ns)/2], ns[len(ns)*99/100]
	// What reading the clock around a call costs by itself, which both
	// sides' figures include (Java's System.nanoTime likewise).
	for i := range ns {
		start := time.Now()
		ns[i] = time.Since(start)
	}
	slices.Sort(ns)
	clock := ns[len(ns)/2]

	dir := b.TempDir()
	var aclText, actText strings.Builder
	for _, a := range acls {
		fmt.Fprintf(&aclText, "%d\t%s\t%d\t%s\t%s\t%d\t%d\n", a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.Permission)
	}
	for _, a := range actions {
		fmt.Fprintf(&actText, "%s\t%s\t%d\t%d\t%s\n", a.Principal, a.Host, a.Operation, a.ResourceType, a.ResourceName)
	}
	writeFile(b, filepath.Join(dir, "acls.tsv"), []byte(aclText.String()))
	writeFile(b, filepath.Join(dir, "actions.tsv"), []byte(actText.String()))
	cp := filepath.Join(libs, "*")
	if out, err := exec.Command("javac", "-cp", cp, "-d", dir, filepath.Join("testdata", "authzbench", "AuthorizerBench.java")).CombinedOutput(); err != nil {
		b.Fatalf("javac: %v\n%s", err, out)
	}
	out, err := exec.Command("java", "-Xmx512m", "-cp", dir+string(os.PathListSeparator)+cp, "AuthorizerBench",
		filepath.Join(dir, "acls.tsv"), filepath.Join(dir, "actions.tsv"), "5").CombinedOutput()
	if err != nil {
		b.Fatalf("java AuthorizerBench: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`allowed=(\d+) p50_ns=(\d+) p99_ns=(\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		b.Fatalf("AuthorizerBench printed %q", out)
	}
	if m[1] != fmt.Sprint(allowed) {
		b.Errorf("Apache allowed %s of %d actions, kraftd %d", m[1], len(actions), allowed)
	}
	var ap50, ap99 int64
	fmt.Sscan(m[2], &ap50)
	fmt.Sscan(m[3], &ap99)
	b.ReportMetric(float64(kp50.Nanoseconds()), "kraftd-p50-ns")
	b.ReportMetric(float64(kp99.Nanoseconds()), "kraftd-p99-ns")
	b.ReportMetric(float64(ap50), "apache-p50-ns")
	b.ReportMetric(float64(ap99), "apache-p99-ns")
	fmt.Printf("authorize() with %d ACLs, %d actions (%d allowed by both): kraftd p50 %v p99 %v; Apache %s StandardAuthorizer p50 %v p99 %v (Go clock read alone: p50 %v)\n",
		len(acls), len(actions), allowed, kp50, kp99, version, time.Duration(ap50), time.Duration(ap99), clock)
}
