//go:build unix

package main

import (
	"errors"
	"syscall"
)

// detachedAttr starts a detached `cluster up` in a session of its own, so
// the terminal's hang-up and Ctrl-C do not reach it.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// processAlive reports whether a process with pid exists.
func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// terminate sends SIGTERM to pid; a process already gone is no error.
func terminate(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
