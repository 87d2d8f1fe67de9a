package kit

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// stopTimeout is how long a graceful stop waits after SIGTERM before it
// sends SIGKILL: an Apache broker's controlled shutdown takes a few seconds.
const stopTimeout = 30 * time.Second

// process is one child process (a JVM or a kraftd binary) run again and
// again with the same command and log file. It is signalled only by its own
// PID, and only while it has not been reaped, so a signal never reaches a
// process that took over the number.
type process struct {
	name string
	argv []string
	env  []string // extra KEY=VALUE entries on top of os.Environ()
	log  string   // stdout and stderr, appended across runs

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once the current run has been reaped
	err  error         // the current run's Wait error
}

// start runs the process. Each child gets its own process group (so a
// terminal's Ctrl-C reaches only the Go program, which then stops its
// children in order) and SIGKILL from the kernel should the Go program die
// first (Pdeathsig): a JVM never outlives the program that started it.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		return fmt.Errorf("kit: %s is already running (pid %d)", p.name, p.cmd.Process.Pid)
	}
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("kit: %w", err)
	}
	defer out.Close() // the child holds its own copy
	fmt.Fprintf(out, "=== kit: start %q at %s\n", p.argv, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startOnLockedThread(cmd); err != nil {
		return fmt.Errorf("kit: start %s: %w", p.name, err)
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

// pid is the current run's process id, or 0 when it is not running.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.done) {
		return 0
	}
	return p.cmd.Process.Pid
}

// running reports whether the current run has not exited.
func (p *process) running() bool { return p.pid() != 0 }

// exitErr is the last run's Wait error once it has exited: nil for exit
// status 0, and nil while it runs.
func (p *process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.done) {
		return nil
	}
	return p.cmd.Process.Signal(sig)
}

func (p *process) wait() {
	p.mu.Lock()
	d := p.done
	p.mu.Unlock()
	if d != nil {
		<-d
	}
}

// kill sends SIGKILL and returns once the process is reaped.
func (p *process) kill() {
	_ = p.signal(syscall.SIGKILL)
	p.wait()
}

// stop sends SIGTERM (and SIGCONT, in case it is paused), waits up to
// stopTimeout, then SIGKILL; it returns once the process is reaped.
func (p *process) stop() {
	p.mu.Lock()
	d := p.done
	p.mu.Unlock()
	if d == nil {
		return
	}
	_ = p.signal(syscall.SIGTERM)
	_ = p.signal(syscall.SIGCONT)
	select {
	case <-d:
	case <-time.After(stopTimeout):
		p.kill()
	}
}

// stopAll stops processes at once: a quorum's last members wait for their
// peers while shutting down, so one by one is slower.
func stopAll(ps []*process) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop()
		}()
	}
	wg.Wait()
}

// The kernel sends a child its parent-death signal when the thread that
// forked it exits, not only the process: a Go program may end a thread
// (one whose goroutine locked it and returned). So every child is forked
// from one goroutine locked to its thread for the program's life.
var starts = make(chan startRequest)

type startRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var startLoop sync.Once

func startOnLockedThread(cmd *exec.Cmd) error {
	startLoop.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: this thread lives as long as the program
			for r := range starts {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	starts <- startRequest{cmd, done}
	return <-done
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
