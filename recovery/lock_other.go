//go:build !unix

package recovery

// probeApacheLock is a no-op where kraftd's own lock is the only one.
func probeApacheLock(string) error { return nil }
