package compat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kraftd/kraftd/internal/supervisor"
)

// StopTimeout is how long Stop waits after SIGTERM before it sends SIGKILL.
const StopTimeout = 10 * time.Second

// Process is a child process started for a test: an Apache Kafka JVM, a
// kraftd binary or any other command, run by the supervisor the kit
// package uses too (package internal/supervisor: its own process group, a
// parent-death signal, signals by PID only until it is reaped, output
// appended to Log across restarts). The test's end stops it, pass or fail
// (a JVM with SIGKILL, anything else with SIGTERM and then SIGKILL after
// StopTimeout), and writes its log to
// t.Log when the test failed (or always, when the environment variable
// KRAFTD_COMPAT_DUMP is set).
type Process struct {
	supervisor.Process
	t testing.TB
}

// NewProcess describes a process without starting it. Call Start (and Start
// again after it exits, to restart it with the same command and log file).
func NewProcess(t testing.TB, name string, argv ...string) *Process {
	t.Helper()
	if len(argv) == 0 {
		t.Fatal("compat: NewProcess without a command")
	}
	repeatFailureLast(t)
	logDir := t.TempDir() // registered before our cleanup, so removed after it
	p := &Process{t: t}
	p.Name, p.Argv, p.Log, p.StopTimeout = name, argv, filepath.Join(logDir, name+".log"), StopTimeout
	t.Cleanup(func() {
		if pid := p.PID(); pid != 0 {
			start := time.Now()
			how := "stopped"
			if p.isJVM() {
				// The test is over and nothing reads an Apache JVM's
				// shutdown: a graceful one only waits (a broker's
				// controlled shutdown waits out StopTimeout once the
				// controllers are gone). kraftd still gets SIGTERM, so
				// that a race build ends as it would in use.
				p.Kill()
				how = "killed"
			} else {
				p.Stop()
			}
			t.Logf("compat: %s %s (pid %d) at the test's end in %v", how, p.Name, pid, time.Since(start).Round(time.Millisecond))
		}
		if t.Failed() || os.Getenv("KRAFTD_COMPAT_DUMP") != "" {
			p.dump()
		}
	})
	return p
}

// isJVM reports whether the process is a Java virtual machine (an Apache
// server or tool).
func (p *Process) isJVM() bool { return filepath.Base(p.Argv[0]) == "java" }

// StartProcess is NewProcess followed by Start.
func StartProcess(t testing.TB, name string, argv ...string) *Process {
	t.Helper()
	p := NewProcess(t, name, argv...)
	p.Start()
	return p
}

// Start runs the process. It fails the test if the process is running or
// cannot be started. Output is appended to p.Log across restarts.
func (p *Process) Start() {
	p.t.Helper()
	if err := p.Process.Start(); err != nil {
		p.t.Fatalf("compat: %v", err)
	}
}

// StopAll stops several processes at once (SIGTERM to all, then SIGKILL to
// those still running after StopTimeout), which is quicker than one by one
// for a quorum whose last members wait for their peers while shutting down.
// Nil ones are skipped.
func StopAll(ps ...*Process) {
	var sps []*supervisor.Process
	for _, p := range ps {
		if p != nil {
			sps = append(sps, &p.Process)
		}
	}
	supervisor.StopAll(sps...)
}

// Wait waits for the current run to exit on its own, up to timeout, and
// returns its exit error; on timeout it returns an error and leaves it running.
func (p *Process) Wait(timeout time.Duration) error {
	d := p.Done()
	if d == nil {
		return errorf("%s was never started", p.Name)
	}
	select {
	case <-d:
		_, err := p.Exited()
		return err
	case <-time.After(timeout):
		return errorf("%s still running after %v", p.Name, timeout)
	}
}

// Output returns what the process has written so far (all runs).
func (p *Process) Output() string {
	b, err := os.ReadFile(p.Log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("(cannot read %s: %v)", p.Log, err)
	}
	return string(b)
}

// dumpLimit caps how much of a process log goes to t.Log on failure: the
// head (startup, configuration) and the tail (what happened last).
const dumpLimit = 64 << 10

func (p *Process) dump() {
	out := []byte(p.Output())
	if len(out) > dumpLimit {
		head, tail := out[:dumpLimit/4], out[len(out)-3*dumpLimit/4:]
		out = bytes.Join([][]byte{head, []byte("\n... (cut) ...\n"), tail}, nil)
	}
	p.t.Logf("---- output of %s (%s) ----\n%s\n---- end of %s ----", p.Name, p.Log, out, p.Name)
}
