package storage

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// On a real disk the active segment has blocks reserved past its end, which
// a reader never sees (the size is that of the batches), and which closing
// the log hands back.
func TestReservedBlocksInvisibleAndReleased(t *testing.T) {
	dir := filepath.Join(t.TempDir(), MetadataLogDirName)
	l, err := OpenLog(OSFS{}, dir, LogConfig{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	raw := mkBatch(0, 1, 3, 100, 1)
	if err := l.Append(raw); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, segmentName(0, logSuffix))
	size, allocated := fileSpace(t, seg)
	if size != int64(len(raw)) {
		t.Fatalf("segment is %d bytes; want the batch's %d", size, len(raw))
	}
	if allocated < reserveAhead {
		t.Fatalf("%d bytes allocated to the active segment; want at least %d reserved", allocated, reserveAhead)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	size, allocated = fileSpace(t, seg)
	if size != int64(len(raw)) || allocated > 64<<10 {
		t.Fatalf("closed segment: %d bytes, %d allocated; want %d bytes and the reservation released", size, allocated, len(raw))
	}
}

func fileSpace(t *testing.T, path string) (size, allocated int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size(), st.Sys().(*syscall.Stat_t).Blocks * 512
}
