package compat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// podman runs the podman CLI with the global flags this machine needs and
// returns its trimmed stdout, or an error carrying its stderr.
type podman struct {
	t      *testing.T
	global []string
}

// newPodman finds podman. Where runc is installed it is the runtime, with
// cgroupfs: in a container (CI) crun refuses hybrid cgroups and systemd is
// absent, and runc with cgroupfs runs on an ordinary host too.
func newPodman(t *testing.T) *podman {
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatalf("podman is missing (apt-get install podman runc): %v", err)
	}
	p := &podman{t: t}
	if _, err := exec.LookPath("runc"); err == nil {
		p.global = []string{"--runtime", "runc", "--cgroup-manager", "cgroupfs"}
	}
	return p
}

func (p *podman) run(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", append(append([]string{}, p.global...), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// logs is what a container wrote to stdout and stderr (kraftd logs to stderr).
func (p *podman) logs(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "podman", append(append([]string{}, p.global...), "logs", name)...).CombinedOutput()
	return string(out), err
}

func (p *podman) must(timeout time.Duration, args ...string) string {
	p.t.Helper()
	out, err := p.run(timeout, args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// buildImage builds a static kraftd for this machine's architecture and the
// image from it with scripts/image, as make image does, and loads it into
// podman; it returns the image's name.
func buildImage(t *testing.T, p *podman) string {
	root := RepoRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "kraftd")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -buildid=", "-o", bin, "./cmd/kraftd")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build kraftd: %v\n%s", err, out)
	}
	// Loaded from the oci-archive, named after its ref name.
	name := fmt.Sprintf("kraftd-imagetest-%d", os.Getpid())
	archive := filepath.Join(dir, "kraftd-oci.tar")
	tool := exec.Command("go", "run", "./scripts/image", "-bin", "linux/"+runtime.GOARCH+"="+bin,
		"-oci", filepath.Join(dir, "oci"), "-tar", archive, "-tag", name)
	tool.Dir = root
	if out, err := tool.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image: %v\n%s", err, out)
	}
	p.must(5*time.Minute, "load", "-q", "-i", archive)
	return "localhost/" + name + ":latest"
}
