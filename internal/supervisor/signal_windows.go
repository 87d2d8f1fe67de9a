package supervisor

import "syscall"

// Windows has no job-control signals; these numbers are never sent there,
// since StartCmd starts nothing on Windows.
const (
	sigStop = syscall.Signal(0x13)
	sigCont = syscall.Signal(0x12)
	sigQuit = syscall.Signal(0x3)
)
