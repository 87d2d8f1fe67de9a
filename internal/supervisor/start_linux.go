package supervisor

import (
	"os"
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

// intoCgroup makes cmd start in the cgroup v2 directory cg (clone3 with
// CLONE_INTO_CGROUP).
func intoCgroup(cmd *exec.Cmd, cg *os.File) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(cg.Fd())
	return nil
}
