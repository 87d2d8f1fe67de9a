//go:build unix

package supervisor

import "syscall"

const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
	sigQuit = syscall.SIGQUIT
)
