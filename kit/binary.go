package kit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/kraftd/kraftd/internal/supervisor"
)

// BinaryEnv names the environment variable pointing at a kraftd binary for
// Specs that name none.
const BinaryEnv = "KRAFTD_BINARY"

var built struct {
	sync.Mutex
	path string
}

// kraftdBinary returns the kraftd program to run: the Spec's, $KRAFTD_BINARY,
// or one built from this package's module with `go build` (once per program).
func kraftdBinary(ctx context.Context, spec Spec) (string, error) {
	for _, bin := range []string{spec.KraftdBinary, os.Getenv(BinaryEnv)} {
		if bin == "" {
			continue
		}
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("kit: kraftd binary: %w", err)
		}
		return bin, nil
	}
	built.Lock()
	defer built.Unlock()
	if built.path != "" {
		return built.path, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	// Beside the jar cache, one binary per checkout or module version: go
	// build leaves an up-to-date binary as it is.
	out := filepath.Join(filepath.Dir(cache), "bin", fmt.Sprintf("kraftd-%x", hashString(root)))
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/kraftd")
	cmd.Dir = root
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := supervisor.Run(cmd); err != nil {
		return "", fmt.Errorf("kit: build kraftd in %s (set %s to use a built one): %v\n%s", root, BinaryEnv, err, output.Bytes())
	}
	spec.Logf("kit: built kraftd from %s into %s in %v", root, out, time.Since(start).Round(100*time.Millisecond))
	built.path = out
	return out, nil
}

// moduleRoot is the directory of the kraftd module this file was compiled
// from: a checkout, or the module cache's read-only copy, which go build
// reads the same way.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("kit: cannot locate the kraftd module to build kraftd: set %s", BinaryEnv)
	}
	root := filepath.Dir(filepath.Dir(file))
	if _, err := os.Stat(filepath.Join(root, "cmd", "kraftd")); err != nil {
		return "", fmt.Errorf("kit: no kraftd sources at %s (built with -trimpath?): set %s: %w", root, BinaryEnv, err)
	}
	return root, nil
}

// hashString is FNV-1a, to name a built binary after its source directory.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
