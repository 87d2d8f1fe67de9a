package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

var build struct {
	once sync.Once
	bin  string
	err  error
}

// kraftdBinary builds the command once per test binary run.
func kraftdBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "kraftd-cli-test")
		if err != nil {
			build.err = err
			return
		}
		build.bin = filepath.Join(dir, "kraftd")
		if out, err := exec.Command("go", "build", "-o", build.bin, ".").CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.bin != "" {
		os.RemoveAll(filepath.Dir(build.bin))
	}
	os.Exit(code)
}

func run(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("%v: %v", args, err)
	return "", -1
}

func writeConfig(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "server.properties")
	body := "process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n" +
		"listeners=CONTROLLER://127.0.0.1:0\nmetadata.log.dir=" + filepath.Join(dir, "meta") + "\n" + extra
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

func TestCommandLine(t *testing.T) {
	bin := kraftdBinary(t)

	if out, code := run(t, bin, "random-uuid"); code != 0 || !regexp.MustCompile(`^[A-Za-z0-9_-]{22}\n$`).MatchString(out) {
		t.Errorf("random-uuid: exit %d, %q", code, out)
	}

	t.Run("invalid value names the key", func(t *testing.T) {
		conf := writeConfig(t, "controller.quorum.fetch.timeout.ms=soon\ncontroller.quorum.voters=1@127.0.0.1:9093\n")
		out, code := run(t, bin, "start", "--config", conf)
		if code != 2 || !strings.Contains(out, "controller.quorum.fetch.timeout.ms") {
			t.Errorf("exit %d: %s", code, out)
		}
	})

	t.Run("unformatted directory", func(t *testing.T) {
		conf := writeConfig(t, "controller.quorum.voters=1@127.0.0.1:9093\n")
		out, code := run(t, bin, "start", "--config", conf)
		if code == 0 || !strings.Contains(out, "not formatted") {
			t.Errorf("exit %d: %s", code, out)
		}
	})

	t.Run("format twice", func(t *testing.T) {
		conf := writeConfig(t, "")
		id := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
		out := mustRun(t, bin, "format", "--config", conf, "--cluster-id", id, "--standalone")
		if !strings.Contains(out, "Formatting dynamic metadata voter directory") {
			t.Errorf("format printed %q", out)
		}
		if out, code := run(t, bin, "format", "--config", conf, "--cluster-id", id, "--standalone"); code == 0 || !strings.Contains(out, "--ignore-formatted") {
			t.Errorf("second format: exit %d: %s", code, out)
		}
		if out, code := run(t, bin, "format", "--config", conf, "--cluster-id", id, "--standalone", "--ignore-formatted"); code != 0 {
			t.Errorf("--ignore-formatted: exit %d: %s", code, out)
		}
	})

	// Apache 4.4's format names the metadata directory by whether it
	// holds voters: "dynamic metadata voter directory" with them, else
	// "metadata directory" (static voters or --no-initial-controllers).
	t.Run("format names the metadata directory as Apache 4.4 does", func(t *testing.T) {
		id := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
		for _, tc := range []struct{ extra, flag, want string }{
			{"", "--standalone", "dynamic metadata voter directory"},
			{"", "--initial-controllers=1@127.0.0.1:9093:" + id, "dynamic metadata voter directory"},
			{"controller.quorum.bootstrap.servers=127.0.0.1:9093\n", "--no-initial-controllers", "metadata directory"},
			{"controller.quorum.voters=1@127.0.0.1:9093\n", "", "metadata directory"},
		} {
			args := []string{"format", "--config", writeConfig(t, tc.extra), "--cluster-id", id}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			out := mustRun(t, bin, args...)
			if !regexp.MustCompile(`^Formatting ` + tc.want + ` /\S+ with metadata.version`).MatchString(out) {
				t.Errorf("format %s: printed %q, want Formatting %s", tc.flag, out, tc.want)
			}
		}
	})

	t.Run("format needs a quorum flag without static voters", func(t *testing.T) {
		conf := writeConfig(t, "")
		out, code := run(t, bin, "format", "--config", conf, "--cluster-id", "q1Sh-9_ISia_zwGINzRvyQ")
		if code != 2 || !strings.Contains(out, "--standalone") {
			t.Errorf("exit %d: %s", code, out)
		}
	})

	t.Run("dump-log reads Apache's files", func(t *testing.T) {
		files, _ := filepath.Glob("../../compat/testdata/apache-*/__cluster_metadata-0/*.log")
		snaps, _ := filepath.Glob("../../compat/testdata/apache-*/__cluster_metadata-0/*.checkpoint")
		boot, _ := filepath.Glob("../../compat/testdata/apache-*/bootstrap.checkpoint")
		files = append(append(files, snaps...), boot...)
		if len(files) < 4 {
			t.Fatalf("Apache golden files missing: %v", files)
		}
		for _, f := range files {
			out := mustRun(t, bin, "dump-log", f)
			if !strings.Contains(out, "| offset: ") || strings.Contains(out, "Undecodable") || strings.Contains(out, "UnknownControl") {
				t.Errorf("%s:\n%s", f, out)
			}
			if out := mustRun(t, bin, "dump-log", "--json", f); !strings.HasPrefix(out, "{") {
				t.Errorf("%s --json:\n%s", f, out)
			}
		}
	})
}

func mustRun(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, code := run(t, bin, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, out)
	}
	return out
}
