package apachekafka

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A server gets the server logging files and 512 MiB, a tool the tools'
// files and 256 MiB; Heap and Options apply; the files are written into
// the cache beside the version's directory.
func TestArgv(t *testing.T) {
	cache := t.TempDir()
	versionDir := filepath.Join(cache, "4.4.0")
	server, err := JVM{}.Argv(versionDir, MainKafka, "server.properties")
	if err != nil {
		t.Fatal(err)
	}
	tool, err := JVM{Heap: "1g", Options: []string{"-Dx=y"}}.Argv(versionDir, MainStorageTool, "format")
	if err != nil {
		t.Fatal(err)
	}
	want := func(argv []string, opts ...string) {
		t.Helper()
		for _, o := range opts {
			if !slices.Contains(argv, o) {
				t.Errorf("%q lacks %s", argv, o)
			}
		}
	}
	logging := filepath.Join(cache, "logging", loggingVersion)
	want(server, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile="+filepath.Join(logging, "server-log4j2.xml"),
		"-Dlog4j.configuration=file:"+filepath.Join(logging, "server-log4j.properties"),
		filepath.Join(versionDir, "libs", "*"))
	want(tool, "-Xmx1g", "-Dx=y", "-Dlog4j2.configurationFile="+filepath.Join(logging, "tools-log4j2.xml"))
	if got := server[len(server)-2:]; !slices.Equal(got, []string{MainKafka, "server.properties"}) {
		t.Errorf("server argv ends %q", got)
	}
	if i, j := slices.Index(tool, "-Dx=y"), slices.Index(tool, "-cp"); i > j {
		t.Errorf("options after the class path: %q", tool)
	}
	for _, name := range []string{"server-log4j2.xml", "server-log4j.properties", "tools-log4j2.xml", "tools-log4j.properties"} {
		if b, err := os.ReadFile(filepath.Join(logging, name)); err != nil || len(b) == 0 {
			t.Errorf("%s: %v (%d bytes)", name, err, len(b))
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(logging, "*.*.*"))
	if len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

// The JVM this machine runs takes every profile's options.
func TestProfilesStartAJVM(t *testing.T) {
	for profile, opts := range profileOptions {
		out, err := exec.Command("java", append(slices.Clone(opts), "-version")...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "version") {
			t.Errorf("profile %d %q: %v\n%s", profile, opts, err, out)
		}
	}
}
