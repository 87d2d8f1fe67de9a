package compat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StopTimeout is how long Stop waits after SIGTERM before it sends SIGKILL.
const StopTimeout = 10 * time.Second

// Process is a child process started for a test: an Apache Kafka JVM, a
// kraftd binary or any other command. Its stdout and stderr go to one log
// file, which is written to t.Log when the test fails (or always, when the
// environment variable KRAFTD_COMPAT_DUMP is set). It is stopped by PID
// (SIGTERM, then SIGKILL) and reaped when the test ends, pass or fail.
type Process struct {
	Name string   // a label for logs, e.g. "apache-4.1.2-node1"
	Argv []string // the command and its arguments
	Dir  string   // working directory; "" for the test's
	Env  []string // extra environment (KEY=VALUE), added to os.Environ()
	Log  string   // path of the file that captures stdout and stderr

	t    testing.TB
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once the current run has been reaped
	err  error         // the current run's Wait error
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
	p := &Process{Name: name, Argv: argv, Log: filepath.Join(logDir, name+".log"), t: t}
	t.Cleanup(func() {
		if p.Done() != nil && !isClosed(p.done) {
			start := time.Now()
			p.Stop()
			t.Logf("compat: stopped %s (pid %d) in %v", p.Name, p.PID(), time.Since(start).Round(time.Millisecond))
		}
		if t.Failed() || os.Getenv("KRAFTD_COMPAT_DUMP") != "" {
			p.dump()
		}
	})
	return p
}

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
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		p.t.Fatalf("compat: %s is already running (pid %d)", p.Name, p.cmd.Process.Pid)
	}
	out, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatalf("compat: %v", err)
	}
	defer out.Close() // the child holds its own copy of the descriptor
	fmt.Fprintf(out, "=== compat: start %q at %s\n", p.Argv, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so a terminal's Ctrl-C reaches only go test,
	// whose cleanup then stops it; and SIGKILL should the test binary die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("compat: start %s: %v", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
}

// PID is the process id of the current run (0 if never started).
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Done is closed when the current run has exited and been reaped.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Exited reports whether the current run has exited, and its Wait error.
func (p *Process) Exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil || !isClosed(p.done) {
		return false, nil
	}
	return true, p.err
}

// Signal sends sig to the current run by PID. It is a no-op once the run has
// been reaped (so the PID cannot belong to another process by then).
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.done) {
		return nil
	}
	return p.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL and waits until the process is reaped.
func (p *Process) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	if d := p.Done(); d != nil {
		<-d
	}
}

// Pause freezes the process with SIGSTOP; Resume continues it with SIGCONT.
func (p *Process) Pause() error  { return p.Signal(syscall.SIGSTOP) }
func (p *Process) Resume() error { return p.Signal(syscall.SIGCONT) }

// Stop sends SIGTERM (and SIGCONT, in case it is paused), waits up to
// StopTimeout, then sends SIGKILL; it returns once the process is reaped.
// It is safe to call more than once and on a process never started.
func (p *Process) Stop() {
	d := p.Done()
	if d == nil {
		return
	}
	_ = p.Signal(syscall.SIGTERM)
	_ = p.Signal(syscall.SIGCONT)
	select {
	case <-d:
	case <-time.After(StopTimeout):
		_ = p.Signal(syscall.SIGKILL)
		<-d
	}
}

// StopAll stops several processes at once (SIGTERM to all, then SIGKILL to
// those still running after StopTimeout), which is quicker than one by one
// for a quorum whose last members wait for their peers while shutting down.
func StopAll(ps ...*Process) {
	var wg sync.WaitGroup
	for _, p := range ps {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Stop()
		}()
	}
	wg.Wait()
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

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
