//go:build !linux

package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
)

// prepare refuses: without a parent-death signal a child would outlive a
// program that is killed, and a kit cluster would keep its ports and
// JVMs running with nobody to stop them.
func prepare(*exec.Cmd) error {
	return fmt.Errorf("%w on %s", ErrUnsupported, runtime.GOOS)
}

func intoCgroup(*exec.Cmd, *os.File) error {
	return fmt.Errorf("%w on %s", ErrUnsupported, runtime.GOOS)
}
