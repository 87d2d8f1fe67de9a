package nemesis

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// diskSize is each Disk's file system: a sparse file, so only what is
// written takes space, and enough for a test's metadata log (a segment
// of a few megabytes, Apache's preallocated indexes).
const diskSize = "256M"

// Disk is an ext4 file system in a file of the test's, loop-mounted on a
// directory, whose writes Freeze stalls until Thaw.
type Disk struct {
	t      testing.TB
	Dir    string // the mount point
	image  string
	device string // /dev/loopN

	mu     sync.Mutex
	frozen bool
}

// NewDisk makes dir (it must not exist yet) the mount point of a new ext4
// file system. The test's end unmounts it and detaches the loop device; call
// it before starting the processes that write there, so that its cleanup
// runs after theirs.
func NewDisk(t testing.TB, dir string) *Disk {
	t.Helper()
	d := &Disk{t: t, Dir: dir, image: filepath.Join(t.TempDir(), "disk.img")}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("nemesis: %v", err)
	}
	if err := run("truncate", "-s", diskSize, d.image); err != nil {
		t.Fatalf("nemesis: %v", err)
	}
	// No journal: a freeze then stalls the writes themselves, not a
	// journal thread, and a test's file system needs no crash recovery.
	if err := run("mkfs.ext4", "-q", "-F", "-O", "^has_journal", d.image); err != nil {
		t.Fatalf("nemesis: %v", err)
	}
	out, err := exec.Command(sbin("losetup"), "--find", "--show", d.image).CombinedOutput()
	if err != nil {
		t.Fatalf("nemesis: losetup %s: %v: %s", d.image, err, out)
	}
	d.device = strings.TrimSpace(string(out))
	t.Cleanup(d.remove)
	if err := run("mount", d.device, dir); err != nil {
		t.Fatalf("nemesis: %v", err)
	}
	// An empty directory, as a fresh one would be: Apache's log manager
	// refuses a directory in metadata.log.dir that names no partition.
	if err := os.Remove(filepath.Join(dir, "lost+found")); err != nil {
		t.Fatalf("nemesis: %v", err)
	}
	return d
}

// Freeze stalls every write to the file system until Thaw (or the test's
// end: a frozen writer cannot be stopped).
func (d *Disk) Freeze() {
	d.t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := run("fsfreeze", "--freeze", d.Dir); err != nil {
		d.t.Fatalf("nemesis: %v", err)
	}
	d.frozen = true
	// Registered now, so it runs before the cleanups that stop the
	// processes writing here.
	d.t.Cleanup(func() {
		if err := d.thaw(); err != nil {
			d.t.Errorf("nemesis: %v", err)
		}
	})
}

// Thaw lets the writes through again.
func (d *Disk) Thaw() {
	d.t.Helper()
	if err := d.thaw(); err != nil {
		d.t.Fatalf("nemesis: %v", err)
	}
}

func (d *Disk) thaw() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.frozen {
		return nil
	}
	d.frozen = false
	return run("fsfreeze", "--unfreeze", d.Dir)
}

func (d *Disk) remove() {
	errs := []error{d.thaw()}
	if mounted(d.Dir) {
		errs = append(errs, run("umount", d.Dir))
	}
	errs = append(errs, run("losetup", "--detach", d.device))
	for _, err := range errs {
		if err != nil {
			d.t.Errorf("nemesis: cleaning up %s: %v", d.Dir, err)
		}
	}
}

// mounted reports whether dir is a mount point.
func mounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return true // try to unmount; umount says if it was not
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}

func run(name string, args ...string) error {
	out, err := exec.Command(sbin(name), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// sbin finds a system tool, which Debian keeps in /usr/sbin or /sbin,
// outside an ordinary user's PATH.
func sbin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	return name
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
