//go:build !linux

package storage

// reserveBlocks does nothing where fallocate is not available.
func reserveBlocks(File, int64, int64) {}

// syncData is a full Sync where fdatasync is not available.
func syncData(f File) error { return f.Sync() }
