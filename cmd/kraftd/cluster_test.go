//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kraftd/kraftd/kit"
)

// `kraftd cluster up` with one Apache 4.4.0 broker and one kraftd
// controller, kept in --data: it prints the bootstrap servers and takes a
// produce; Ctrl-C (SIGINT) stops every process it started. Then the same
// directory comes back detached (same cluster id), `cluster status` lists
// it up, and `cluster down` stops it all again.
func TestClusterUpCtrlCAndDetach(t *testing.T) {
	bin := kraftdBinary(t)
	dir := t.TempDir()
	args := []string{"cluster", "up", "--brokers", "1", "--controllers", "1", "--kafka", "4.4.0", "--data", dir}

	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited }) // by PID, a no-op once it is reaped

	lines := bufio.NewScanner(stdout)
	bootstrap := waitLine(t, lines, readyBanner, &stderr)
	status := waitLine(t, lines, "", &stderr) // controllers, cluster id, hint, then a status line
	for !strings.Contains(status, "brokers 1/1 up") {
		status = waitLine(t, lines, "", &stderr)
	}
	go io.Copy(io.Discard, stdout) // keep the pipe drained
	produceTo(t, strings.TrimPrefix(bootstrap, readyBanner))
	layout, err := kit.ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if layout.SupervisorPID != cmd.Process.Pid || len(layout.Nodes) != 2 {
		t.Fatalf("cluster.json while running: %+v (kraftd pid %d)", layout, cmd.Process.Pid)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("cluster up after SIGINT: %v\n%s", err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("cluster up still running 2 minutes after SIGINT\n%s", stderr.String())
	}
	checkGone(t, layout)

	// Detached, on the same directory.
	out, code := run(t, bin, append(args, "--detach")...)
	if code != 0 || !strings.Contains(out, readyBanner) {
		t.Fatalf("cluster up --detach: exit %d\n%s", code, out)
	}
	again, err := kit.ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // should down fail, stop the background run by its PID
		if supervisorRunning(again.SupervisorPID) {
			_ = syscall.Kill(again.SupervisorPID, syscall.SIGKILL)
		}
	})
	if again.ClusterID != layout.ClusterID {
		t.Fatalf("detached run on %s: cluster id %s, want %s", dir, again.ClusterID, layout.ClusterID)
	}
	if out, code := run(t, bin, "cluster", "status", "--data", dir); code != 0 || strings.Count(out, " up\n") != 2 {
		t.Fatalf("cluster status: exit %d\n%s", code, out)
	}
	if out, code := run(t, bin, "cluster", "down", "--data", dir); code != 0 || !strings.Contains(out, "cluster stopped") {
		t.Fatalf("cluster down: exit %d\n%s", code, out)
	}
	checkGone(t, again)
	if out, code := run(t, bin, "cluster", "status", "--data", dir); code != 3 || !strings.Contains(out, "not running") {
		t.Fatalf("cluster status after down: exit %d\n%s", code, out)
	}
}

// waitLine returns the next line of out (the next one starting with prefix,
// if given), failing the test if the command's output ends first.
func waitLine(t *testing.T, out *bufio.Scanner, prefix string, stderr *strings.Builder) string {
	t.Helper()
	for out.Scan() {
		if strings.HasPrefix(out.Text(), prefix) {
			return out.Text()
		}
	}
	t.Fatalf("cluster up ended before printing %q (%v)\nstderr:\n%s", prefix, out.Err(), stderr.String())
	return ""
}

func produceTo(t *testing.T, bootstrap string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: kit.ReadyTopic, Value: []byte("from the test")}).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", bootstrap, err)
	}
}

// checkGone fails the test if a process of the layout still runs. A zombie
// has ended: the detached run, orphaned when `up --detach` returned, waits
// there until init reaps it.
func checkGone(t *testing.T, l *kit.Layout) {
	t.Helper()
	pids := []int{l.SupervisorPID}
	for _, n := range l.Nodes {
		pids = append(pids, n.PID)
	}
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if _, after, _ := strings.Cut(string(stat), ") "); err == nil && !strings.HasPrefix(after, "Z") {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Errorf("pid %d still runs: %q", pid, cmdline)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// `cluster up --sasl` with a mechanism the kit does not set up is refused
// before anything starts, naming the ones it does.
func TestClusterUpRefusesUnknownSASL(t *testing.T) {
	out, code := run(t, kraftdBinary(t), "cluster", "up", "--sasl", "GSSAPI", "--data", t.TempDir())
	if code == 0 || !strings.Contains(out, `SASL mechanism "GSSAPI"`) || !strings.Contains(out, "SCRAM-SHA-512") {
		t.Fatalf("cluster up --sasl GSSAPI: exit %d\n%s", code, out)
	}
}
