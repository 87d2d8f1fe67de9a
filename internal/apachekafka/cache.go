package apachekafka

import (
	"fmt"
	"os"
	"path/filepath"
)

// CacheEnv names the environment variable holding the jar cache directory;
// unset, it is ~/.cache/kraftd/kafka. The layout is <cache>/<version>/libs
// with a .complete marker written last.
const CacheEnv = "KRAFTD_KAFKA_CACHE"

// CacheDir is the jar cache: $KRAFTD_KAFKA_CACHE, or ~/.cache/kraftd/kafka.
func CacheDir() (string, error) {
	if dir := os.Getenv(CacheEnv); dir != "" {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no %s and no home directory: %w", CacheEnv, err)
	}
	return filepath.Join(home, ".cache", "kraftd", "kafka"), nil
}

// Complete reports whether a version's directory of the cache holds a
// finished fetch: the .complete marker is written only after every jar is
// in place, so an interrupted fetch is not taken for one.
func Complete(versionDir string) bool {
	_, err := os.Stat(filepath.Join(versionDir, ".complete"))
	return err == nil
}
