package supervisor

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
)

// StartCmd starts cmd in its own process group with SIGKILL as its
// parent-death signal. Use it for a command that is not a Process, e.g. a
// one-shot tool whose stdout and stderr the caller reads apart; a command
// made with exec.CommandContext is then killed by PID, before it is
// reaped, when its context ends.
//
// The kernel sends the parent-death signal when the thread that forked the
// child exits, not only the process, and a Go program does end threads:
// one whose goroutine locked it (runtime.LockOSThread) and returned
// without unlocking it. So every child is forked from one goroutine that
// locks its thread and never returns, and that thread lives as long as the
// program.
//
// Only Linux has a parent-death signal, so elsewhere StartCmd refuses with
// ErrUnsupported rather than start a child that could outlive the program.
func StartCmd(cmd *exec.Cmd) error {
	if err := prepare(cmd); err != nil {
		return err
	}
	startLoop.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked, and this goroutine never returns
			for r := range starts {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	starts <- startRequest{cmd, done}
	return <-done
}

// StartCmdIn is StartCmd with cmd starting in the cgroup v2 directory cg
// ("" for the program's own), as Process.Cgroup says why.
func StartCmdIn(cmd *exec.Cmd, cg string) error {
	if cg != "" {
		f, err := os.Open(cg)
		if err != nil {
			return err
		}
		defer f.Close() // the kernel has placed the child once Start returns
		if err := intoCgroup(cmd, f); err != nil {
			return err
		}
	}
	return StartCmd(cmd)
}

// Run is StartCmd followed by cmd.Wait.
func Run(cmd *exec.Cmd) error {
	if err := StartCmd(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

var (
	startLoop sync.Once
	starts    = make(chan startRequest)
)

type startRequest struct {
	cmd  *exec.Cmd
	done chan error
}
