// Package supervisor runs the child processes that the kit package and the
// compat test harness start: Apache Kafka JVMs, kraftd binaries and
// one-shot tools. A child must never outlive the Go program that started
// it, and a signal meant for it must never reach another process, so every
// child
//
//   - runs in its own process group: a terminal's Ctrl-C reaches only the Go
//     program, which then stops its children in order;
//   - gets SIGKILL from the kernel should the Go program die first (the
//     parent-death signal), forked from a thread that lives as long as the
//     program (see StartCmd);
//   - is signalled by its own PID only, and only until it has been reaped,
//     so a signal never reaches a process that took over the number.
//
// Only Linux gives the parent-death signal, so on every other system the
// supervisor starts nothing and says so (ErrUnsupported): the kit and
// `kraftd cluster` are Linux-only, while kraftd itself builds everywhere.
package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ErrUnsupported is what starting a child returns where the supervisor
// cannot promise the child dies with the program: every system but Linux.
var ErrUnsupported = errors.New("supervisor: starting child processes needs Linux, whose parent-death signal " +
	"stops them should this program die; the kit and `kraftd cluster` run only there")

// DefaultStopTimeout is how long Stop waits after SIGTERM before it sends
// SIGKILL when Process.StopTimeout is 0: an Apache broker's controlled
// shutdown takes a few seconds.
const DefaultStopTimeout = 30 * time.Second

// Process is one child process run again and again with the same command
// and log file. Set the exported fields before the first Start; its
// methods are safe to call from several goroutines.
type Process struct {
	Name string   // a label for errors and logs, e.g. "apache-4.4.0-node1"
	Argv []string // the command and its arguments
	Dir  string   // working directory; "" for the program's
	Env  []string // extra KEY=VALUE entries on top of os.Environ()
	Log  string   // the file stdout and stderr go to, appended across runs
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL; 0
	// means DefaultStopTimeout.
	StopTimeout time.Duration
	// Cgroup is a cgroup v2 directory every run starts in ("" for the
	// program's own): the fault-injection tests (package internal/nemesis)
	// filter a node's packets by its cgroup, which a socket takes from
	// its process when it is made, so the process must be in it from birth.
	// Linux only.
	Cgroup string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once the current run has been reaped
	err  error         // the current run's Wait error
}

// Start runs the process, appending its output to Log under a line that
// says what was started and when. It returns an error if the process is
// running or cannot be started.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.Argv) == 0 {
		return fmt.Errorf("start %s: no command", p.Name)
	}
	if p.cmd != nil && !isClosed(p.done) {
		return fmt.Errorf("%s is already running (pid %d)", p.Name, p.cmd.Process.Pid)
	}
	out, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the child holds its own copy of the descriptor
	fmt.Fprintf(out, "=== start %q at %s\n", p.Argv, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := StartCmdIn(cmd, p.Cgroup); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
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
	return nil
}

// PID is the current run's process id while it runs (a paused run is
// running), else 0.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.done) {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the current run has not exited.
func (p *Process) Running() bool { return p.PID() != 0 }

// Done is closed when the current run has exited and been reaped; it is
// nil before the first Start.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Exited reports whether the current run has exited, and its Wait error
// (nil for exit status 0).
func (p *Process) Exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil || !isClosed(p.done) {
		return false, nil
	}
	return true, p.err
}

// Signal sends sig to the current run by PID. It does nothing once the run
// has been reaped, when the PID may belong to another process.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.done) {
		return nil
	}
	return p.cmd.Process.Signal(sig)
}

// Pause freezes the process with SIGSTOP, as a hung process or a long GC
// pause looks to its peers.
func (p *Process) Pause() error { return p.Signal(sigStop) }

// Resume continues a paused process with SIGCONT.
func (p *Process) Resume() error { return p.Signal(sigCont) }

// Kill sends SIGKILL and returns once the process is reaped.
func (p *Process) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	if d := p.Done(); d != nil {
		<-d
	}
}

// Stop sends SIGTERM (and SIGCONT, in case it is paused), waits up to
// StopTimeout, then sends SIGQUIT and, quitDumpWait later, SIGKILL; it
// returns once the process is reaped. It is safe to call more than once
// and on a process never started.
func (p *Process) Stop() {
	d := p.Done()
	if d == nil {
		return
	}
	timeout := p.StopTimeout
	if timeout == 0 {
		timeout = DefaultStopTimeout
	}
	_ = p.Signal(syscall.SIGTERM)
	_ = p.Signal(sigCont)
	select {
	case <-d:
	case <-time.After(timeout):
		p.QuitThenKill()
	}
}

// quitDumpWait is how long QuitThenKill lets a SIGQUIT dump be written.
const quitDumpWait = 3 * time.Second

// QuitThenKill is for a process that did not stop when asked: SIGQUIT
// makes a Go program write every goroutine's stack to its output and exit
// (a JVM writes its threads' and goes on), so the log says where it hung;
// SIGKILL follows if it is still there quitDumpWait later. It returns once
// the process is reaped.
func (p *Process) QuitThenKill() {
	d := p.Done()
	if d == nil {
		return
	}
	_ = p.Signal(sigQuit)
	select {
	case <-d:
	case <-time.After(quitDumpWait):
		p.Kill()
	}
}

// StopAll stops processes at once (nil ones are skipped): a quorum's last
// members wait for their peers while shutting down, so one by one is
// slower.
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

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
