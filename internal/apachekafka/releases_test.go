package apachekafka

import (
	"slices"
	"testing"
)

func TestLine(t *testing.T) {
	for version, want := range map[string]string{"3.9.2": "3.9", "4.4.0": "4.4", "4.1.1": "4.1", "4.4.17": "4.4"} {
		if got, err := Line(version); got != want || err != nil {
			t.Errorf("Line(%q) = %q, %v; want %q", version, got, err, want)
		}
	}
	for _, v := range []string{"3.8.1", "5.0.0", "4.4", "latest", "../4.4.0", "4.4.0-rc1"} {
		if got, err := Line(v); err == nil {
			t.Errorf("Line(%q) = %q, want an error", v, got)
		}
	}
}

func TestReleaseOf(t *testing.T) {
	if r, err := ReleaseOf("4.4.0"); err != nil || r != Pinned[len(Pinned)-1] {
		t.Errorf("ReleaseOf(4.4.0) = %+v, %v", r, err)
	}
	// An untested patch takes its line's log4j2 and asks for kafka-shell.
	if r, err := ReleaseOf("4.4.1"); err != nil || r != (Release{Version: "4.4.1", Log4j: "2.25.3", Shell: true}) {
		t.Errorf("ReleaseOf(4.4.1) = %+v, %v", r, err)
	}
	if _, err := ReleaseOf("5.0.0"); err == nil {
		t.Error("ReleaseOf(5.0.0) succeeded")
	}
}

// Pinned holds one release per line, oldest first, each a version Line
// takes, and PinnedVersion finds each by its line.
func TestPinned(t *testing.T) {
	var lines []string
	for _, r := range Pinned {
		line, err := Line(r.Version)
		if err != nil {
			t.Fatal(err)
		}
		if PinnedVersion(line) != r.Version {
			t.Errorf("PinnedVersion(%q) = %q, want %q", line, PinnedVersion(line), r.Version)
		}
		lines = append(lines, line)
	}
	if !slices.IsSorted(lines) || len(slices.Compact(slices.Clone(lines))) != len(lines) {
		t.Errorf("pinned lines %v: want one per line, oldest first", lines)
	}
	if PinnedVersion("3.8") != "" {
		t.Error("PinnedVersion(3.8) found one")
	}
}
