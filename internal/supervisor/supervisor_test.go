//go:build linux

package supervisor

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orphanEnv makes the test binary, run again by TestChildDiesWithProgram,
// start a child and die without stopping it.
const orphanEnv = "SUPERVISOR_TEST_ORPHAN_LOG"

func TestMain(m *testing.M) {
	// Keep the main thread to the main goroutine: the runtime never ends
	// the main thread, so TestChildOutlivesStartingThread's goroutine must
	// not run on it.
	runtime.LockOSThread()
	if log := os.Getenv(orphanEnv); log != "" {
		p := &Process{Name: "sleeper", Argv: []string{"sleep", "300"}, Log: log}
		if err := p.Start(); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println(p.PID())
		panic("dying with a child running") // no Stop, as a crashed test
	}
	os.Exit(m.Run())
}

// A program that dies (here by panicking) without stopping its children
// takes them with it: the kernel's parent-death signal, not a cleanup,
// kills them.
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

// A child started from a goroutine that locks its thread and returns
// without unlocking it (so the runtime ends that thread) keeps running:
// it was forked from the supervisor's own thread, whose end alone would
// send it the parent-death signal.
func TestChildOutlivesStartingThread(t *testing.T) {
	p := &Process{Name: "sleeper", Argv: []string{"sleep", "300"}, Log: filepath.Join(t.TempDir(), "sleeper.log")}
	t.Cleanup(p.Kill)
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
		errc <- p.Start()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // time for the thread's end, and a signal, to land
	if !p.Running() {
		exited, err := p.Exited()
		t.Fatalf("the child died with the thread that asked for it (exited %v: %v)", exited, err)
	}
}

// Stop sends SIGTERM, and SIGQUIT then SIGKILL after StopTimeout to a
// child that ignores both; the log holds every run's output, each under
// its own start line; signals after the end reach nobody.
func TestStopRestartAndLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	p := &Process{Name: "stubborn", Argv: []string{"sh", "-c", `trap "" TERM QUIT; echo up; while :; do sleep 0.1; done`},
		Log: log, StopTimeout: 500 * time.Millisecond}
	for run := range 2 {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err == nil {
			t.Fatal("a second Start of a running process succeeded")
		}
		waitFor(t, func() bool { return strings.Count(readFile(t, log), "up\n") == run+1 })
		start := time.Now()
		p.Stop()
		if took := time.Since(start); took < p.StopTimeout+quitDumpWait {
			t.Errorf("run %d stopped after %v, before the stop timeout and the dump's wait: SIGTERM or SIGQUIT was not ignored?", run, took)
		}
		exited, err := p.Exited()
		if !exited || err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("run %d: exited %v with %v, want killed", run, exited, err)
		}
		if p.PID() != 0 || p.Running() {
			t.Errorf("run %d: pid %d after Stop", run, p.PID())
		}
		if err := p.Signal(syscall.SIGKILL); err != nil {
			t.Errorf("a signal after the end: %v", err)
		}
	}
	if n := strings.Count(readFile(t, log), "=== start "); n != 2 {
		t.Errorf("%d start lines in the log, want 2:\n%s", n, readFile(t, log))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// A child that ignores SIGTERM but not SIGQUIT ends on the SIGQUIT that
// Stop sends after StopTimeout (a Go program writes its stacks then).
func TestStopQuitsBeforeKilling(t *testing.T) {
	p := &Process{Name: "deaf", Argv: []string{"sh", "-c", `trap "" TERM; echo up; while :; do sleep 0.1; done`},
		Log: filepath.Join(t.TempDir(), "child.log"), StopTimeout: 200 * time.Millisecond}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(readFile(t, p.Log), "up\n") })
	p.Stop()
	if exited, err := p.Exited(); !exited || err == nil || !strings.Contains(err.Error(), "quit") {
		t.Errorf("exited %v with %v, want ended by SIGQUIT", exited, err)
	}
}
