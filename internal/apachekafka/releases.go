// Package apachekafka is what the kit package and the compat test harness
// share about real Apache Kafka: the releases they run (Pinned), where the
// jars of each are cached (CacheDir), and how a JVM of one is started
// (JVM.Argv), with one set of logging files. Fetching the jars is
// kit.FetchKafka's job, which `make kafka` runs for every pinned release.
package apachekafka

import (
	"fmt"
	"regexp"
	"slices"
)

// Release is one Apache Kafka release and what fetching it takes.
type Release struct {
	Version string // e.g. "4.4.0"
	// Log4j is the log4j2 release fetched beside it: the one Apache's own
	// build of that line uses (3.9 shipped reload4j, but it logs through
	// slf4j 1.7 like 4.0 and 4.1, so it takes theirs).
	Log4j string
	// Shell is whether Maven Central serves the release's kafka-shell jar
	// (the metadata shell); not every release's is.
	Shell bool
}

// Pinned are the releases kraftd is proven against and the kit is tested
// with, oldest first: the newest patch of every release line in use that
// Maven Central serves. `make kafka` fetches them all; kit.Versions and
// compat.Lines are their versions.
var Pinned = []Release{
	{Version: "3.9.2", Log4j: "2.24.3", Shell: true},
	{Version: "4.0.2", Log4j: "2.24.3", Shell: true},
	{Version: "4.1.2", Log4j: "2.24.3", Shell: true},
	{Version: "4.2.2", Log4j: "2.25.3", Shell: false},
	{Version: "4.3.2", Log4j: "2.25.3", Shell: false},
	{Version: "4.4.0", Log4j: "2.25.3", Shell: false},
}

// Versions are the versions of Pinned, oldest first (a new slice).
func Versions() []string {
	out := make([]string, len(Pinned))
	for i, r := range Pinned {
		out[i] = r.Version
	}
	return out
}

var versionPattern = regexp.MustCompile(`^(\d+)\.(\d+)\.\d+$`)

// Line returns the release line, "major.minor", of a version of one of
// the pinned releases' lines, or an error for any other version.
func Line(version string) (string, error) {
	m := versionPattern.FindStringSubmatch(version)
	if m == nil {
		return "", fmt.Errorf("Apache Kafka version %q: want major.minor.patch, e.g. %s", version, Pinned[len(Pinned)-1].Version)
	}
	line := m[1] + "." + m[2]
	if !slices.ContainsFunc(Pinned, func(r Release) bool { return lineOf(r.Version) == line }) {
		first, last := Pinned[0].Version, Pinned[len(Pinned)-1].Version
		return "", fmt.Errorf("Apache Kafka %s is not of the release lines %s to %s (tested: %v)", version, lineOf(first), lineOf(last), Versions())
	}
	return line, nil
}

// ReleaseOf returns the pinned release of that version, or, for another
// patch of a pinned line (run untested), one like its line's pinned
// release: the same log4j2, and its kafka-shell assumed served.
func ReleaseOf(version string) (Release, error) {
	line, err := Line(version)
	if err != nil {
		return Release{}, err
	}
	for _, r := range Pinned {
		if r.Version == version {
			return r, nil
		}
	}
	for _, r := range Pinned {
		if lineOf(r.Version) == line {
			return Release{Version: version, Log4j: r.Log4j, Shell: true}, nil
		}
	}
	panic("unreachable: Line accepted " + version)
}

// PinnedVersion returns the pinned version of a release line ("4.1" ->
// "4.1.2"), or "" if no pinned release is of that line.
func PinnedVersion(line string) string {
	for _, r := range Pinned {
		if lineOf(r.Version) == line {
			return r.Version
		}
	}
	return ""
}

// lineOf is "major.minor" of a well-formed version.
func lineOf(version string) string {
	m := versionPattern.FindStringSubmatch(version)
	if m == nil {
		return ""
	}
	return m[1] + "." + m[2]
}
