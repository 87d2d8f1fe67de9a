package systemd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const execPath = "/usr/local/bin/kraftd"

var built struct {
	once     sync.Once
	bin, err string
}

// kraftd is the binary make build wrote (KRAFTD_BINARY), or one built
// once for the package's tests.
func kraftd(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("KRAFTD_BINARY"); bin != "" {
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "kraftd-systemd-test")
		if err != nil {
			built.err = err.Error()
			return
		}
		built.bin = filepath.Join(dir, "kraftd")
		if out, err := exec.Command("go", "build", "-o", built.bin, "../../cmd/kraftd").CombinedOutput(); err != nil {
			built.err = fmt.Sprintf("go build: %v\n%s", err, out)
		}
	})
	if built.err != "" {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.bin != "" {
		os.RemoveAll(filepath.Dir(built.bin))
	}
	os.Exit(code)
}

// TestUnitVerifies runs systemd-analyze verify on the unit, with its
// ExecStart pointed at a real kraftd (verify wants the file to exist);
// verify exits 0 even for an unknown key, so any output fails too.
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is needed to check deploy/systemd/kraftd.service: apt-get install systemd")
	}
	unit, err := os.ReadFile("kraftd.service")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := filepath.Abs(kraftd(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(unit), execPath); n != 2 {
		t.Fatalf("the unit names %s %d times, want 2 (the install comment and ExecStart)", execPath, n)
	}
	copied := filepath.Join(t.TempDir(), "kraftd.service")
	if err := os.WriteFile(copied, []byte(strings.ReplaceAll(string(unit), execPath, bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copied).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	// The same check catches a misspelt key, which verify only warns about.
	bad := filepath.Join(t.TempDir(), "kraftd.service")
	broken := strings.Replace(strings.ReplaceAll(string(unit), execPath, bin), "ProtectSystem=", "ProtectSystm=", 1)
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command(analyze, "verify", bad).CombinedOutput(); !strings.Contains(string(out), "ProtectSystm") {
		t.Errorf("verify said nothing of a misspelt key: %s", out)
	}
}

// TestUnitHardening checks the unit keeps what an operator expects of a
// controller's unit.
func TestUnitHardening(t *testing.T) {
	unit, err := os.ReadFile("kraftd.service")
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, line := range strings.Split(string(unit), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			settings[k] = v
		}
	}
	for key, want := range map[string]string{
		"User":                     "kraftd",
		"NoNewPrivileges":          "yes",
		"ProtectSystem":            "strict",
		"ReadWritePaths":           "/var/lib/kraftd",
		"LimitNOFILE":              "100000",
		"RestartPreventExitStatus": "2",
		"KillSignal":               "SIGTERM",
	} {
		if settings[key] != want {
			t.Errorf("%s=%q, want %q", key, settings[key], want)
		}
	}
}

// TestUnitCommandLine runs the unit's ExecStart with the real binary and a
// properties file that is not there: kraftd must take the flags and refuse
// the file as a configuration error (exit 2), which the unit does not
// restart.
func TestUnitCommandLine(t *testing.T) {
	unit, err := os.ReadFile("kraftd.service")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(unit), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
			args = strings.Fields(rest)
		}
	}
	if len(args) < 2 || args[0] != execPath {
		t.Fatalf("ExecStart: %q", args)
	}
	missing := filepath.Join(t.TempDir(), "server.properties")
	for i, a := range args {
		if a == "/etc/kraftd/server.properties" {
			args[i] = missing
		}
	}
	out, err := exec.Command(kraftd(t), args[1:]...).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), missing) {
		t.Errorf("%q: %v\n%s", args, err, out)
	}
}
