package kit

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// Versions are the Apache Kafka releases the kit is tested with: the newest
// patch of every release line from 3.9 to 4.4, the same list
// scripts/fetch-kafka.sh pins. Other patch releases of those lines are
// accepted and fetched the same way, untested.
var Versions = []string{"3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"}

// DefaultVersion is the Apache Kafka release a Spec without one runs.
const DefaultVersion = "4.4.0"

// CacheEnv names the environment variable holding the jar cache directory;
// unset, it is ~/.cache/kraftd/kafka. The layout is <cache>/<version>/libs
// with a .complete marker, shared with `make kafka`.
const CacheEnv = "KRAFTD_KAFKA_CACHE"

// Main classes the kit runs.
const (
	mainKafka       = "kafka.Kafka"
	mainStorageTool = "kafka.tools.StorageTool"
)

//go:embed pom.xml
var pomXML []byte

//go:embed log4j2.xml
var log4j2XML []byte

//go:embed log4j.properties
var log4jProperties []byte

var versionPattern = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)$`)

// releaseLine returns "major.minor" of an Apache Kafka version, which is
// also the --release-version both kraftd's and Apache's format take, or an
// error if the kit does not run that line.
func releaseLine(version string) (string, error) {
	m := versionPattern.FindStringSubmatch(version)
	if m == nil {
		return "", fmt.Errorf("kit: Apache Kafka version %q: want major.minor.patch, e.g. %s", version, DefaultVersion)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major*100+minor < 309 || major*100+minor > 404 {
		return "", fmt.Errorf("kit: Apache Kafka %s: the kit runs the release lines 3.9 to 4.4 (tested: %v)", version, Versions)
	}
	return m[1] + "." + m[2], nil
}

// CacheDir is the jar cache: $KRAFTD_KAFKA_CACHE, or ~/.cache/kraftd/kafka.
func CacheDir() (string, error) {
	if dir := os.Getenv(CacheEnv); dir != "" {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("kit: no %s and no home directory: %w", CacheEnv, err)
	}
	return filepath.Join(home, ".cache", "kraftd", "kafka"), nil
}

// FetchKafka makes sure the jars of an Apache Kafka version are in the
// cache, fetching them from Maven Central with Maven (mvn) when they are
// not. logf, if not nil, hears what is fetched and how long it took. Several
// programs fetching at once take turns (a file lock per version). It returns
// the version's directory.
func FetchKafka(ctx context.Context, version string, logf func(format string, args ...any)) (string, error) {
	if _, err := releaseLine(version); err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, version)
	if complete(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("kit: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cache, "."+version+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("kit: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("kit: lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if complete(dir) { // another program fetched it while we waited
		return dir, nil
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	logf("kit: fetching Apache Kafka %s from Maven Central with Maven into %s", version, dir)
	start := time.Now()
	n, err := mavenFetch(ctx, version, dir)
	if err != nil {
		return "", err
	}
	logf("kit: fetched Apache Kafka %s: %d jars in %v", version, n, time.Since(start).Round(100*time.Millisecond))
	return dir, nil
}

func complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".complete"))
	return err == nil
}

// mavenFetch runs dependency:copy-dependencies on the embedded pom into
// dir/libs, with the same properties scripts/fetch-kafka.sh passes, and
// writes the .complete marker last.
func mavenFetch(ctx context.Context, version, dir string) (int, error) {
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return 0, fmt.Errorf("kit: Apache Kafka %s is not in the cache and mvn is missing to fetch it: install Apache Maven (apt-get install maven)", version)
	}
	if err := os.RemoveAll(dir); err != nil {
		return 0, fmt.Errorf("kit: %w", err)
	}
	build := filepath.Join(dir, "build")
	if err := os.MkdirAll(build, 0o755); err != nil {
		return 0, fmt.Errorf("kit: %w", err)
	}
	pom := filepath.Join(build, "pom.xml")
	if err := os.WriteFile(pom, pomXML, 0o644); err != nil {
		return 0, fmt.Errorf("kit: %w", err)
	}
	tmp := filepath.Join(dir, "libs.tmp")
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-Dstyle.color=never", "-f", pom,
		"-Dkafka.version="+version, "-Dlog4j.version="+log4jFor(version),
		"-Dkafka.shell="+strconv.FormatBool(shellServed(version)),
		"-Dcompat.build.dir="+build, "dependency:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return 0, fmt.Errorf("kit: Maven could not fetch Apache Kafka %s: %v\n%s", version, err, out)
	}
	os.RemoveAll(build)
	if _, err := os.Stat(filepath.Join(tmp, "kafka_2.13-"+version+".jar")); err != nil {
		return 0, fmt.Errorf("kit: kafka_2.13-%s.jar missing after the fetch: %w", version, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "libs")); err != nil {
		return 0, fmt.Errorf("kit: %w", err)
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "libs", "*.jar"))
	marker := fmt.Sprintf("version=%s\njars=%d\n", version, len(jars))
	if err := os.WriteFile(filepath.Join(dir, ".complete"), []byte(marker), 0o644); err != nil {
		return 0, fmt.Errorf("kit: %w", err)
	}
	return len(jars), nil
}

// log4jFor is the log4j2 release Apache's own build of that Kafka line
// uses (kept equal to scripts/fetch-kafka.sh, which shares the cache).
func log4jFor(version string) string {
	line, _ := releaseLine(version)
	switch line {
	case "3.9", "4.0", "4.1":
		return "2.24.3"
	}
	return "2.25.3"
}

// shellServed is whether the registry serves that release's kafka-shell jar
// (kept equal to scripts/fetch-kafka.sh).
func shellServed(version string) bool { return version != "4.2.2" && version != "4.4.0" }

// javaArgv is the command line of a JVM running mainClass from the cached
// jars of version, logging at INFO to stdout through configuration files
// written into confDir. Servers get a 512 MiB heap, tools 256 MiB. All run
// the quick-starting way: the client compiler only (C2's compiler threads
// would compete with start-up for the few cores test machines have, for
// throughput a test cluster does not need) and the serial collector.
func javaArgv(versionDir, confDir, mainClass string, args ...string) ([]string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("kit: java is missing: install Java 17 or newer (apt-get install openjdk-17-jre-headless)")
	}
	log2, log1 := filepath.Join(confDir, "log4j2.xml"), filepath.Join(confDir, "log4j.properties")
	if err := os.WriteFile(log2, log4j2XML, 0o644); err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	if err := os.WriteFile(log1, log4jProperties, 0o644); err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	heap := "-Xmx256m"
	if mainClass == mainKafka {
		heap = "-Xmx512m"
	}
	argv := []string{java, heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"}
	argv = append(argv, "-XX:CICompilerCount=2", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile="+log2, "-Dlog4j.configuration=file:"+log1,
		"-cp", filepath.Join(versionDir, "libs", "*"), mainClass)
	return append(argv, args...), nil
}
