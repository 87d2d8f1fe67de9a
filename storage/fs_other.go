//go:build !linux

package storage

// reserveBlocks does nothing where fallocate is not available.
func reserveBlocks(File, int64, int64) {}

// syncData is a full Sync where fdatasync is not available.
func syncData(f File) error { return f.Sync() }

// startWriteback does nothing where sync_file_range is not available: the
// final Sync writes everything.
func startWriteback(File, int64, int64) {}
