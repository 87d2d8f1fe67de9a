package storage

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStorageImportsNothingAbove fails when storage, or a package it
// imports, imports a kraftd package outside storage/ (metadata, quorum,
// node, ...): storage is the layer everything else builds on (doc.go). It
// asks `go list -deps` for each platform kraftd is vetted on, since a
// file for one platform may import what the others do not.
func TestStorageImportsNothingAbove(t *testing.T) {
	t.Parallel()
	self, err := exec.Command("go", "list", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	own := strings.TrimSpace(string(self)) // github.com/kraftd/kraftd/storage
	module := strings.TrimSuffix(own, "/storage") + "/"
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command("go", "list", "-deps", ".")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list -deps: %v", goos, err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			if strings.HasPrefix(pkg, module) && pkg != own && !strings.HasPrefix(pkg, own+"/") {
				t.Errorf("GOOS=%s: storage depends on %s, a package above it", goos, pkg)
			}
		}
	}
}
