package nemesis

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFreezeStallsWrites writes and syncs a file on a frozen Disk: it must
// not finish while the disk is frozen, and must once it is thawed.
func TestFreezeStallsWrites(t *testing.T) {
	d := NewDisk(t, filepath.Join(t.TempDir(), "mnt"))
	if entries, err := os.ReadDir(d.Dir); err != nil || len(entries) != 0 {
		t.Fatalf("a new Disk holds %v (%v), want nothing", entries, err)
	}
	d.Freeze()
	done := make(chan error, 1)
	go func() {
		f, err := os.Create(filepath.Join(d.Dir, "f"))
		if err == nil {
			if _, err = f.Write([]byte("x")); err == nil {
				err = f.Sync()
			}
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a write to a frozen disk finished (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	d.Thaw()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the write did not finish a minute after Thaw")
	}
}
