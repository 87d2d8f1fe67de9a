package storage

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

func TestSnapshotWriteFreezeListDelete(t *testing.T) {
	fsys := NewMemFS()
	dir := testDir
	id := SnapshotID{EndOffset: 1234, Epoch: 7}
	if id.FileName() != "00000000000000001234-0000000007.checkpoint" {
		t.Fatalf("name %s", id.FileName())
	}
	w, err := CreateSnapshot(fsys, dir, id)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := fsys.ReadDir(dir)
	if len(names) != 1 || !bytes.HasPrefix([]byte(names[0]), []byte("00000000000000001234-0000000007-")) ||
		filepath.Ext(names[0]) != ".part" {
		t.Fatalf("partial file %v", names)
	}
	data := bytes.Repeat([]byte("0123456789"), 100)
	if err := w.Write(data[:500]); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(data[500:]); err != nil {
		t.Fatal(err)
	}
	// Not visible before Freeze. (ListSnapshots would remove the .part: it
	// is for startup only.)
	if _, err := OpenSnapshot(fsys, dir, id); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("visible before freeze: %v", err)
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]byte("x")); !errors.Is(err, ErrSnapshotDone) {
		t.Fatalf("write after freeze: %v", err)
	}
	// Frozen means durable: any crash keeps it whole.
	for seed := uint64(0); seed < 20; seed++ {
		c := fsys.Crash(newRand(seed))
		r, err := OpenSnapshot(c, dir, id)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := r.ReadAt(0, 5000)
		if r.Size() != 1000 || !bytes.Equal(got, data) {
			t.Fatalf("seed %d: snapshot lost after crash", seed)
		}
		r.Close()
	}
	r, _ := OpenSnapshot(fsys, dir, id)
	if got, _ := r.ReadAt(990, 100); !bytes.Equal(got, data[990:]) {
		t.Fatalf("tail read %q", got)
	}
	if got, _ := r.ReadAt(1000, 100); len(got) != 0 {
		t.Fatal("read at end returned bytes")
	}
	r.Close()

	// Leftovers of an aborted writer and an interrupted delete go on listing.
	w2, _ := CreateSnapshot(fsys, dir, SnapshotID{2000, 7})
	_ = w2.Write([]byte("partial"))
	w3, _ := CreateSnapshot(fsys, dir, SnapshotID{3000, 8})
	if err := w3.Abort(); err != nil {
		t.Fatal(err)
	}
	f, _ := fsys.Create(filepath.Join(dir, "00000000000000000500-0000000003.checkpoint.deleted"))
	f.Close()
	boot := BootstrapSnapshotID
	if !boot.IsBootstrap() || boot.FileName() != "00000000000000000000-0000000000.checkpoint" {
		t.Fatal("bootstrap id")
	}
	f, _ = fsys.Create(filepath.Join(dir, boot.FileName()))
	f.Close()
	ids, err := ListSnapshots(fsys, dir)
	if err != nil || len(ids) != 2 || ids[0] != boot || ids[1] != id {
		t.Fatalf("list %v %v", ids, err)
	}
	names, _ = fsys.ReadDir(dir)
	if len(names) != 2 {
		t.Fatalf("leftovers not removed: %v", names)
	}
	if err := DeleteSnapshot(fsys, dir, id); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSnapshot(fsys, dir, id); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open deleted: %v", err)
	}
	if ids, _ := ListSnapshots(fsys.Crash(newRand(9)), dir); len(ids) != 1 || ids[0] != boot {
		t.Fatalf("deleted snapshot came back after crash: %v", ids)
	}
}

func TestParseSnapshotName(t *testing.T) {
	for name, want := range map[string]bool{
		"00000000000000000010-0000000002.checkpoint":          true,
		"00000000000000000010-0000000002-123.checkpoint.part": true,
		"00000000000000000010-0000000002.checkpoint.deleted":  true,
		"00000000000000000010-0000000002.checkpointx":         false,
		"0000000000000000010-0000000002.checkpoint":           false,
		"00000000000000000010-000000002.checkpoint":           false,
		"00000000000000000010.log":                            false,
		"00000000000000000010-0000000002-extra.checkpoint":    false,
		"bootstrap.checkpoint":                                false,
	} {
		if _, _, ok := parseSnapshotName(name); ok != want {
			t.Errorf("%s: %v", name, ok)
		}
	}
}
