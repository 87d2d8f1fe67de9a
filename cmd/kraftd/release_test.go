package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/internal/apachekafka"
)

// TestVersion builds kraftd as make build and a release do (version,
// commit and date by -ldflags) and checks what `version` and `--version`
// print; the plain test build, with none set, must say so.
func TestVersion(t *testing.T) {
	if out := mustRun(t, kraftdBinary(t), "version"); !strings.HasPrefix(out, "kraftd devel\n") {
		t.Errorf("a build without -ldflags printed:\n%s", out)
	}
	bin := filepath.Join(t.TempDir(), "kraftd")
	build := exec.Command("go", "build", "-ldflags",
		"-X main.version=v1.2.3-test -X main.commit=0123abcd -X main.date=2026-01-02T03:04:05Z", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := mustRun(t, bin, "version")
	for _, want := range []string{
		"kraftd 1.2.3-test\n",
		"commit:             0123abcd\n",
		"built:              2026-01-02T03:04:05Z\n",
		"go:                 go1.",
		"metadata.version:   3.3-IV3 to 4.4-IV2\n",
		"tested with Apache Kafka: " + strings.Join(apachekafka.Versions(), ", ") + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("version lacks %q:\n%s", want, out)
		}
	}
	if flag := mustRun(t, bin, "--version"); flag != out {
		t.Errorf("--version printed\n%s\nversion printed\n%s", flag, out)
	}
}

// TestExitCodes checks the one rule with the real binary: 2 for a usage or
// configuration error, 1 for a failure at run time.
func TestExitCodes(t *testing.T) {
	bin := kraftdBinary(t)
	voters := "controller.quorum.voters=1@127.0.0.1:9093\n"
	conf := writeConfig(t, voters)
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"unknown command", []string{"frobnicate"}, 2, `no command "frobnicate"`},
		{"unknown flag", []string{"start", "--config", conf, "--bogus"}, 2, "bogus"},
		{"missing required flag", []string{"start"}, 2, `"config"`},
		{"missing file", []string{"start", "--config", conf + ".missing"}, 2, "no such file"},
		{"bad log level", []string{"--log-level", "loud", "start", "--config", conf}, 2, "--log-level"},
		{"invalid value", []string{"start", "--config", writeConfig(t, voters+"controller.quorum.fetch.timeout.ms=soon\n")}, 2, "controller.quorum.fetch.timeout.ms"},
		{"override without =", []string{"start", "--config", conf, "--override", "node.id"}, 2, "want key=value"},
		{"invalid override", []string{"start", "--config", conf, "--override", "controller.quorum.fetch.timeout.ms=soon"}, 2, "with --override: config controller.quorum.fetch.timeout.ms"},
		{"unknown completion shell", []string{"completion", "fish"}, 2, "only bash"},
		{"status asking nobody", []string{"status"}, 2, "--bootstrap-controller or --config is required"},
		{"status of a file naming no controller", []string{"status", "--config", writeConfig(t, "")}, 2, "controller.quorum.voters"},
		{"unformatted directory", []string{"start", "--config", conf}, 1, "not formatted"},
		{"recover of an unformatted directory", []string{"recover", "--config", conf}, 2, "not formatted"},
		{"recover from a broker unconfirmed", []string{"recover", "--config", conf, "--from-broker-dir", conf}, 2, "--yes-i-lost-the-majority"},
	} {
		out, code := run(t, bin, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.says) {
			t.Errorf("%s: exit %d (want %d): %s", tc.name, code, tc.code, out)
		}
	}
}

// TestStartOverrideAndJSONLogs starts a real node whose properties file
// points at an unformatted directory and whose --override points at a
// formatted one, so it starts only if the override is applied. Every JSON
// line it logs must have unique keys and durations in *_ms fields, and
// SIGTERM must end it with exit 0.
func TestStartOverrideAndJSONLogs(t *testing.T) {
	bin := kraftdBinary(t)
	formatted := writeConfig(t, "")
	id := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
	mustRun(t, bin, "format", "--config", formatted, "--cluster-id", id, "--standalone")
	metaDir := filepath.Join(filepath.Dir(formatted), "meta")
	conf := writeConfig(t, "") // its own metadata.log.dir is never formatted

	cmd := exec.Command(bin, "--log-format", "json", "start", "--config", conf,
		"--override", "metadata.log.dir="+metaDir, "--override", "controller.quorum.bootstrap.servers=127.0.0.1:9093")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	var seen []string
	started, signalled := false, false
	deadline := time.After(3 * time.Minute) // generous: a loaded machine
	for done := false; !done; {
		select {
		case line, ok := <-lines:
			if !ok {
				done = true
				break
			}
			seen = append(seen, line)
			if !started && strings.Contains(line, `"message":"kraftd started"`) {
				started = true
				if !strings.Contains(line, `"startup_took_ms":`) || !strings.Contains(line, metaDir) {
					t.Errorf("start line: %s", line)
				}
				if err := cmd.Process.Signal(os.Interrupt); err != nil {
					t.Fatal(err)
				}
				signalled = true
			}
		case <-deadline:
			t.Fatalf("no exit within 3 minutes; log:\n%s", strings.Join(seen, "\n"))
		}
	}
	err = <-exited
	exited <- err // for the cleanup
	if !started || !signalled || err != nil {
		t.Fatalf("started %v, exit %v; log:\n%s", started, err, strings.Join(seen, "\n"))
	}
	for _, line := range seen {
		if err := uniqueKeys(line); err != nil {
			t.Errorf("%v: %s", err, line)
		}
	}
	if last := seen[len(seen)-1]; !strings.Contains(last, `"took_ms":`) {
		t.Errorf("last line has no took_ms: %s", last)
	}
}

// uniqueKeys fails for a line that is not one JSON object with each key
// once, at any depth.
func uniqueKeys(line string) error {
	dec := json.NewDecoder(strings.NewReader(line))
	if err := objectKeys(dec); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

// objectKeys reads one JSON value from dec, checking every object in it.
func objectKeys(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		keys := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key := k.(string)
			if keys[key] {
				return fmt.Errorf("key %q twice", key)
			}
			keys[key] = true
			if err := objectKeys(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		for dec.More() {
			if err := objectKeys(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}

func TestUniqueKeysCatchesDuplicates(t *testing.T) {
	if err := uniqueKeys(`{"level":"warn","a":{"b":1},"level":"debug"}`); err == nil {
		t.Error("a duplicate level passed")
	}
	if err := uniqueKeys(`{"level":"warn","a":{"level":1}}`); err != nil {
		t.Error(err)
	}
}
