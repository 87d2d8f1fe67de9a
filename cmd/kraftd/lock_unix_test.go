//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestApacheLockRefused holds, from another process, the fcntl lock
// Apache's FileLock (FileChannel.tryLock) takes on a directory's .lock, and
// runs format, start and recover on that directory: each refuses with exit
// code 2, naming the lock file and the fix, and writes nothing. On Linux kraftd's own
// flock does not see that lock, so storage tries it first.
func TestApacheLockRefused(t *testing.T) {
	t.Parallel()
	bin := kraftdBinary(t)
	conf := writeConfig(t, "")
	meta := filepath.Join(filepath.Dir(conf), "meta")
	lock := filepath.Join(meta, ".lock")
	says := []string{lock, "fcntl lock", "stop that process first"}
	cluster := strings.TrimSpace(mustRun(t, bin, "random-uuid"))
	format := []string{"format", "--config", conf, "--cluster-id", cluster, "--standalone"}
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}

	release := holdFcntlLock(t, lock)
	if out, code := run(t, bin, format...); code != 2 || !containsAll(out, says) {
		t.Errorf("format of a held directory: exit %d (want 2, saying %q):\n%s", code, says, out)
	}
	if _, err := os.Stat(filepath.Join(meta, "meta.properties")); err == nil {
		t.Error("a refused format wrote meta.properties")
	}
	release()
	mustRun(t, bin, format...)

	holdFcntlLock(t, lock)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"start", "--config", conf}, 2},
		{[]string{"recover", "--config", conf, "--dry-run"}, 2},
	} {
		if out, code := run(t, bin, tc.args...); code != tc.code || !containsAll(out, says) {
			t.Errorf("kraftd %s of a held directory: exit %d (want %d, saying %q):\n%s", tc.args[0], code, tc.code, says, out)
		}
	}
}

// holdFcntlLock runs this test binary as a helper that takes an fcntl
// write lock on path, as Apache's FileChannel.tryLock does, and holds it
// until release or the test's end.
func holdFcntlLock(t *testing.T, path string) (release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldFcntlLock$")
	cmd.Env = append(os.Environ(), "KRAFTD_TEST_HOLD_LOCK="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	release = func() { cmd.Process.Kill(); cmd.Wait() }
	t.Cleanup(release)
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked" {
		t.Fatalf("helper: %q, %v", buf, err)
	}
	return release
}

func TestHelperHoldFcntlLock(t *testing.T) {
	path := os.Getenv("KRAFTD_TEST_HOLD_LOCK")
	if path == "" {
		return // only as holdFcntlLock's helper
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLKW, &lk); err != nil {
		t.Fatal(err)
	}
	fmt.Print("locked")
	select {}
}
