package compat

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kraftd/kraftd/internal/apachekafka"
	"github.com/kraftd/kraftd/internal/loopback"
)

// Lines are the newest patch of every Apache Kafka release line in use that
// the registry serves, oldest first: the smoke set runs against each. They
// are the pinned releases of package apachekafka, which `make kafka`
// fetches and kit.Versions lists too.
var Lines = apachekafka.Versions()

// Versions are the Apache Kafka releases the full scenario set runs against:
// the 4.1.x line and the newest line, each at its pinned patch.
var Versions = []string{apachekafka.PinnedVersion("4.1"), Lines[len(Lines)-1]}

// CacheEnv names the environment variable that points at the directory where
// `make kafka` put the Apache Kafka jars.
const CacheEnv = apachekafka.CacheEnv

// KafkaCache returns the cache directory holding the given Apache Kafka
// version, or fails the test (never skips) saying to run `make kafka`.
func KafkaCache(t testing.TB, version string) string {
	t.Helper()
	cache := os.Getenv(CacheEnv)
	if cache == "" {
		t.Fatalf("%s is not set: run `make kafka` (or `make test`, which exports it) to fetch Apache Kafka %s", CacheEnv, version)
	}
	dir := filepath.Join(cache, version)
	if !apachekafka.Complete(dir) {
		t.Fatalf("Apache Kafka %s is not fetched into %s: run `make kafka`", version, cache)
	}
	jar := filepath.Join(dir, "libs", "kafka_2.13-"+version+".jar")
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("Apache Kafka %s is incomplete in %s: run `make kafka` (%v)", version, cache, err)
	}
	return dir
}

// RepoRoot returns the root of the kraftd repository (the directory holding
// go.mod), found from this source file's location.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("compat: cannot locate the repository root")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("compat: no go.mod above %s", file)
		}
		dir = parent
	}
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1 for a process
// the test starts, chosen below the kernel's ephemeral range so that no
// client connection of this busy test binary takes one before that process
// binds it (package loopback).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := loopback.FreePorts(n)
	if err != nil {
		t.Fatalf("compat: %v", err)
	}
	return ports
}

// Addr formats a loopback address for a port.
func Addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// NewUUID returns a random Kafka Uuid in Kafka's text form: 16 bytes in
// URL-safe base64 without padding. Like Apache's Uuid.randomUuid it never
// returns the reserved ids (all-zero high bits and a low value below 100)
// nor a string starting with '-', which command lines would take for a flag.
func NewUUID() string {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(err)
		}
		s := base64.RawURLEncoding.EncodeToString(b[:])
		reserved := true
		for _, c := range b[:15] {
			if c != 0 {
				reserved = false
			}
		}
		if s[0] != '-' && !(reserved && b[15] < 100) {
			return s
		}
	}
}

// JVMBudget is how many Apache Kafka JVMs the tests of this package run at
// once (servers and tools alike). Every top-level test is parallel (at most
// -parallel at once: make test passes 5), and most of a test's time is
// spent waiting on elections, sessions and timeouts, not on a core; the
// quick-start JVMs (client compiler, serial collector) leave the cores to
// each other. The default lets a three-JVM test run beside a two-JVM one
// on the 2-core VM (24 GiB; a test JVM has a 512 MiB heap at most).
// KRAFTD_COMPAT_JVMS overrides it.
var JVMBudget = func() int {
	if n, err := strconv.Atoi(os.Getenv("KRAFTD_COMPAT_JVMS")); err == nil && n > 0 {
		return n
	}
	return 5
}()

var jvms struct {
	sync.Mutex
	cond  *sync.Cond
	inUse int
}

func init() { jvms.cond = sync.NewCond(&jvms.Mutex) }

// ReserveJVMs blocks until n JVM slots of JVMBudget are free, takes them all
// at once (so tests needing several never deadlock each other), and gives
// them back when the test ends. A test asking for more than the budget gets
// the whole budget.
func ReserveJVMs(t testing.TB, n int) {
	t.Helper()
	n = min(n, JVMBudget)
	start := time.Now()
	jvms.Lock()
	for jvms.inUse+n > JVMBudget {
		jvms.cond.Wait()
	}
	jvms.inUse += n
	jvms.Unlock()
	// A parallel test's time includes this wait: say it, so that the
	// slowest tests of a run can be told from the ones that waited.
	if waited := time.Since(start); waited >= time.Second {
		t.Logf("compat: waited %v for %d JVM slots", waited.Round(time.Second), n)
	}
	t.Cleanup(func() {
		jvms.Lock()
		jvms.inUse -= n
		jvms.Unlock()
		jvms.cond.Broadcast()
	})
}

// writeFile writes a file or fails the test.
func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatalf("compat: %v", err)
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf("compat: "+format, args...) }
