package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startAndStop runs kraftd start until it logs that it started and then
// until ready (when given) returns true, and stops it with SIGTERM, failing
// the test if it exits on its own or takes more than 30 seconds.
func startAndStop(t *testing.T, bin string, ready func() bool, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--log-format", "json", "start"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		ok := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !ok && strings.Contains(sc.Text(), "kraftd started") {
				ok = true
				started <- true
			}
		}
		if !ok {
			started <- false
		}
	}()
	select {
	case ok := <-started:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("kraftd exited before it started:\n%s", out.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("kraftd did not start within 30s")
	}
	for deadline := time.Now().Add(30 * time.Second); ready != nil && !ready(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("kraftd did not get ready within 30s")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kraftd after SIGTERM: %v\n%s", err, out.String())
	}
}

// staticVoter writes the configuration of a one-voter static quorum with
// extra keys, and formats its directory.
func staticVoter(t *testing.T, bin, extra string) (conf, meta string) {
	t.Helper()
	port := freePort(t)
	conf = writeConfig(t, fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d\n", port)+extra)
	body, _ := os.ReadFile(conf)
	body = bytes.Replace(body, []byte("127.0.0.1:0"), []byte(fmt.Sprintf("127.0.0.1:%d", port)), 1)
	if err := os.WriteFile(conf, body, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, bin, "format", "--config", conf, "--cluster-id", "q1Sh-9_ISia_zwGINzRvyQ")
	return conf, filepath.Join(filepath.Dir(conf), "meta")
}

// A static voter whose __cluster_metadata-0 was deleted after it ran
// refuses to start, says what happened and how to go on, and starts with
// --accept-lost-log.
func TestStartRefusesLostLog(t *testing.T) {
	bin := kraftdBinary(t)
	conf, meta := staticVoter(t, bin, "")
	startAndStop(t, bin, nil, "--config", conf) // a freshly formatted directory starts
	if err := os.RemoveAll(filepath.Join(meta, "__cluster_metadata-0")); err != nil {
		t.Fatal(err)
	}
	out, code := run(t, bin, "start", "--config", conf)
	if code != 1 || !strings.Contains(out, "metadata log lost") || !strings.Contains(out, "--accept-lost-log") ||
		!strings.Contains(out, "dynamic quorum") {
		t.Fatalf("start after losing the log: exit %d\n%s", code, out)
	}
	startAndStop(t, bin, nil, "--config", conf, "--accept-lost-log")
}

// A flipped byte in a closed segment stops start-up naming the file and
// offset; --truncate-corrupt-log cuts the log there and starts.
func TestStartRefusesCorruptLog(t *testing.T) {
	bin := kraftdBinary(t)
	// Small segments and frequent no-op records roll segments quickly.
	conf, meta := staticVoter(t, bin, "metadata.log.segment.bytes=600\nmetadata.max.idle.interval.ms=20\n")
	partition := filepath.Join(meta, "__cluster_metadata-0")
	segments := func() []string {
		s, _ := filepath.Glob(filepath.Join(partition, "*.log"))
		return s
	}
	startAndStop(t, bin, func() bool { return len(segments()) >= 3 }, "--config", conf)
	first := segments()[0]
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	data[40] ^= 0x40 // inside the first batch's CRC-covered bytes
	if err := os.WriteFile(first, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := run(t, bin, "start", "--config", conf)
	if code != 1 || !strings.Contains(out, first) || !strings.Contains(out, "offset 0") || !strings.Contains(out, "--truncate-corrupt-log") {
		t.Fatalf("start with a corrupt closed segment: exit %d\n%s", code, out)
	}
	if n := len(segments()); n < 3 {
		t.Fatalf("refusing deleted segments: %d left", n)
	}
	startAndStop(t, bin, nil, "--config", conf, "--truncate-corrupt-log")
	startAndStop(t, bin, nil, "--config", conf) // the cut was made for good
}

// A controller formatted --no-initial-controllers starts as an observer of
// the quorum its controller.quorum.bootstrap.servers lead to, even while
// none answers (it goes on asking), and stops on SIGTERM.
func TestStartObserver(t *testing.T) {
	bin := kraftdBinary(t)
	conf := writeConfig(t, fmt.Sprintf("controller.quorum.bootstrap.servers=127.0.0.1:%d\n", freePort(t)))
	mustRun(t, bin, "format", "--config", conf, "--cluster-id", "q1Sh-9_ISia_zwGINzRvyQ", "--no-initial-controllers")
	startAndStop(t, bin, nil, "--config", conf)
}
