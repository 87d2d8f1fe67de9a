package apachekafka

import (
	"crypto/sha256"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Main classes the kit and the harness run; MainKafka is the one server,
// every other main class is a tool.
const (
	MainKafka       = "kafka.Kafka"             // broker or controller
	MainStorageTool = "kafka.tools.StorageTool" // kafka-storage.sh
)

// Profile is how a JVM is tuned.
type Profile int

const (
	// QuickStart, the default, makes small JVMs that start quickly and
	// leave the cores to each other: tests run several at once on 2-core
	// machines and need no throughput. The serial collector (no GC
	// threads), and the client compiler only (-XX:TieredStopAtLevel=1):
	// C2's compilations would compete with start-up for the cores. A
	// 512 MiB heap for a server, 256 MiB for a tool.
	QuickStart Profile = iota
	// Production is how Apache's own scripts tune a server: G1 with short
	// pauses and the full JIT (C1, then C2). For benchmarks that compare
	// Apache's speed with kraftd's, which must not measure an Apache
	// handicapped by the quick-start tuning. The same heaps.
	Production
)

// profileOptions are each profile's JVM options beside the heap.
// -XX:CICompilerCount=2 is what the JVM picks by itself on 2 cores; fixed,
// a larger machine running many JVMs does not give each more compiler
// threads. (With TieredStopAtLevel=1 the JVM would accept 1 as well.)
var profileOptions = map[Profile][]string{
	QuickStart: {"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=2", "-Xss512k", "-Djava.awt.headless=true"},
	Production: {"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:CICompilerCount=2", "-Djava.awt.headless=true"},
}

// JVM says how to run an Apache Kafka JVM; the zero JVM is the quick-start
// profile with the default heap.
type JVM struct {
	Profile Profile
	// Heap is the -Xmx value, e.g. "4g"; "" means 512m for a server
	// (MainKafka) and 256m for a tool.
	Heap string
	// Options are more JVM options, after the profile's, e.g. a -javaagent.
	Options []string
}

// Argv returns the command line of a JVM running mainClass with args from
// the jars of versionDir (<cache>/<version>, fetched). A server logs at
// INFO to stdout; a tool logs to stderr, so that its stdout holds only its
// output. It is started directly, with no shell between, so that signals
// sent to its PID reach it.
func (j JVM) Argv(versionDir, mainClass string, args ...string) ([]string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java is missing: install Java 17 or newer (apt-get install openjdk-17-jre-headless)")
	}
	opts, ok := profileOptions[j.Profile]
	if !ok {
		return nil, fmt.Errorf("unknown JVM profile %d", j.Profile)
	}
	logging, err := loggingDir(filepath.Dir(versionDir))
	if err != nil {
		return nil, err
	}
	kind, heap := "tools", "256m"
	if mainClass == MainKafka {
		kind, heap = "server", "512m"
	}
	if j.Heap != "" {
		heap = j.Heap
	}
	argv := append([]string{java, "-Xmx" + heap}, opts...)
	// 4.x logs through log4j2; 3.x through reload4j (log4j 1), which reads
	// the other option and file: without it a 3.9 JVM prints nothing.
	argv = append(argv,
		"-Dlog4j2.configurationFile="+filepath.Join(logging, kind+"-log4j2.xml"),
		"-Dlog4j.configuration=file:"+filepath.Join(logging, kind+"-log4j.properties"))
	argv = append(argv, j.Options...)
	argv = append(argv, "-cp", filepath.Join(versionDir, "libs", "*"), mainClass)
	return append(argv, args...), nil
}

//go:embed logging
var loggingFiles embed.FS

// loggingVersion names the set of logging files after their contents, so
// that checkouts with different files share a cache without overwriting
// each other's.
var loggingVersion = func() string {
	h := sha256.New()
	_ = fs.WalkDir(loggingFiles, "logging", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := loggingFiles.ReadFile(path)
			fmt.Fprintf(h, "%s %d\n", path, len(b))
			h.Write(b)
		}
		return err
	})
	return fmt.Sprintf("%x", h.Sum(nil))[:12]
}()

var loggingWritten sync.Map // directory -> struct{}, once this program wrote it

// loggingDir writes the logging files, once, into
// <cache>/logging/<loggingVersion> and returns that directory. Each file
// is written under a temporary name and renamed, so a JVM of another
// program starting meanwhile never reads half a file.
func loggingDir(cache string) (string, error) {
	dir := filepath.Join(cache, "logging", loggingVersion)
	if _, ok := loggingWritten.Load(dir); ok {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	entries, err := loggingFiles.ReadDir("logging")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if _, err := os.Stat(path); err == nil {
			continue
		}
		b, err := loggingFiles.ReadFile("logging/" + e.Name())
		if err != nil {
			return "", err
		}
		tmp, err := os.CreateTemp(dir, e.Name()+".*")
		if err != nil {
			return "", err
		}
		_, err = tmp.Write(b)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(tmp.Name(), 0o644)
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return "", err
		}
	}
	loggingWritten.Store(dir, struct{}{})
	return dir, nil
}
