package supervisor

import (
	"os/exec"
	"syscall"
)

// prepare puts cmd in its own process group with SIGKILL as its
// parent-death signal.
func prepare(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return nil
}
