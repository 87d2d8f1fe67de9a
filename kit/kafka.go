package kit

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kraftd/kraftd/internal/apachekafka"
	"github.com/kraftd/kraftd/internal/supervisor"
)

// Versions are the Apache Kafka releases the kit is tested with: the newest
// patch of every release line from 3.9 to 4.4, the set `make kafka` fetches
// and the compat suite proves kraftd against. Other patch releases of those
// lines are accepted and fetched the same way, untested.
var Versions = apachekafka.Versions()

// DefaultVersion is the Apache Kafka release a Spec without one runs.
const DefaultVersion = "4.4.0"

// CacheEnv names the environment variable holding the jar cache directory;
// unset, it is ~/.cache/kraftd/kafka. The layout is <cache>/<version>/libs
// with a .complete marker, shared with `make kafka`.
const CacheEnv = apachekafka.CacheEnv

//go:embed pom.xml
var pomXML []byte

// releaseLine returns "major.minor" of an Apache Kafka version, which is
// also the --release-version both kraftd's and Apache's format take, or an
// error if the kit does not run that line.
func releaseLine(version string) (string, error) {
	line, err := apachekafka.Line(version)
	if err != nil {
		return "", fmt.Errorf("kit: %w", err)
	}
	return line, nil
}

// CacheDir is the jar cache: $KRAFTD_KAFKA_CACHE, or ~/.cache/kraftd/kafka.
func CacheDir() (string, error) {
	dir, err := apachekafka.CacheDir()
	if err != nil {
		return "", fmt.Errorf("kit: %w", err)
	}
	return dir, nil
}

// FetchKafka makes sure the jars of an Apache Kafka version are in the
// cache, fetching them from Maven Central with Maven (mvn) when they are
// not. logf, if not nil, hears what is fetched and how long it took. Several
// programs fetching at once take turns (a file lock per version). It returns
// the version's directory.
func FetchKafka(ctx context.Context, version string, logf func(format string, args ...any)) (string, error) {
	release, err := apachekafka.ReleaseOf(version)
	if err != nil {
		return "", fmt.Errorf("kit: %w", err)
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, version)
	if apachekafka.Complete(dir) {
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
	if err := waitLock(lock); err != nil {
		return "", fmt.Errorf("kit: lock %s: %w", lock.Name(), err)
	}
	defer unlock(lock)
	if apachekafka.Complete(dir) { // another program fetched it while we waited
		return dir, nil
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	logf("kit: fetching Apache Kafka %s from Maven Central with Maven into %s", version, dir)
	start := time.Now()
	n, err := mavenFetch(ctx, release, dir)
	if err != nil {
		return "", err
	}
	logf("kit: fetched Apache Kafka %s: %d jars in %v", version, n, time.Since(start).Round(100*time.Millisecond))
	return dir, nil
}

// mavenFetch runs dependency:copy-dependencies on the embedded pom into
// dir/libs, with the release's log4j2 and kafka-shell choices, and writes
// the .complete marker last.
func mavenFetch(ctx context.Context, release apachekafka.Release, dir string) (int, error) {
	version := release.Version
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
		"-Dkafka.version="+version, "-Dlog4j.version="+release.Log4j,
		"-Dkafka.shell="+strconv.FormatBool(release.Shell),
		"-Dcompat.build.dir="+build, "dependency:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := supervisor.Run(cmd); err != nil {
		os.RemoveAll(dir)
		return 0, fmt.Errorf("kit: Maven could not fetch Apache Kafka %s: %v\n%s", version, err, out.Bytes())
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
