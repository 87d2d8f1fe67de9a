package kit

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orphanEnv makes the test binary, run again by TestChildDiesWithProgram,
// start a child through the kit's process type and die without stopping it.
const orphanEnv = "KIT_TEST_ORPHAN_LOG"

func TestMain(m *testing.M) {
	if log := os.Getenv(orphanEnv); log != "" {
		p := &process{name: "sleeper", argv: []string{"sleep", "300"}, log: log}
		if err := p.start(); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println(p.pid())
		panic("dying with a child running") // no Stop, as a crashed test
	}
	os.Exit(m.Run())
}

// A program that dies (here by panicking) without stopping its cluster
// takes every process the kit started with it: the kernel's parent-death
// signal, not a cleanup, kills them.
func TestChildDiesWithProgram(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), orphanEnv+"="+filepath.Join(t.TempDir(), "sleeper.log"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	_ = cmd.Wait()
	if err != nil {
		t.Fatalf("the helper printed %q", line)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		_, state, _ := strings.Cut(string(stat), ") ")
		if err != nil || strings.HasPrefix(state, "Z") { // gone, or dead and waiting for init
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d still runs a minute after its parent died: %s", pid, stat)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
