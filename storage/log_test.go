package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/kraftd/kraftd/storage/batch"
)

func TestAppendReadBasics(t *testing.T) {
	fsys := NewMemFS()
	l := openTestLog(t, fsys, LogConfig{})
	if l.StartOffset() != 0 || l.EndOffset() != 0 || l.LastEpoch() != 0 {
		t.Fatalf("empty log: start %d end %d epoch %d", l.StartOffset(), l.EndOffset(), l.LastEpoch())
	}
	if raw, err := l.Read(0, 100); err != nil || len(raw) != 0 {
		t.Fatalf("read at end: %d bytes, %v", len(raw), err)
	}
	b1 := mkBatch(0, 1, 3, 10, 100)
	b2 := mkBatch(3, 1, 2, 10, 101)
	b3 := mkBatch(5, 2, 1, 10, 102)
	if err := l.Append(append(bytes.Clone(b1), b2...)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(b3); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 6 || l.LastEpoch() != 2 {
		t.Fatalf("end %d epoch %d", l.EndOffset(), l.LastEpoch())
	}
	// Read from the middle of a batch starts at that batch.
	raw, err := l.Read(4, 1)
	if err != nil || !bytes.Equal(raw, b2) {
		t.Fatalf("Read(4,1) = %d bytes, %v; want batch 2 alone", len(raw), err)
	}
	raw, _ = l.Read(0, len(b1)+len(b2))
	if !bytes.Equal(raw, append(bytes.Clone(b1), b2...)) {
		t.Fatalf("Read(0, two batches) = %d bytes", len(raw))
	}
	raw, _ = l.Read(0, len(b1)+len(b2)-1)
	if !bytes.Equal(raw, b1) {
		t.Fatalf("maxBytes must cut at a whole batch, got %d bytes", len(raw))
	}
	for _, off := range []int64{-1, 7} {
		if _, err := l.Read(off, 10); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("Read(%d): %v", off, err)
		}
	}
	// Bad appends are refused and change nothing.
	for name, raw := range map[string][]byte{
		"gap":           mkBatch(7, 2, 1, 1, 1),
		"overlap":       mkBatch(5, 2, 1, 1, 1),
		"epoch down":    mkBatch(6, 1, 1, 1, 1),
		"partial":       mkBatch(6, 2, 1, 1, 1)[:30],
		"empty":         nil,
		"trailing junk": append(mkBatch(6, 2, 1, 1, 1), 1, 2, 3),
	} {
		if err := l.Append(raw); !errors.Is(err, ErrBadAppend) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	corrupt := mkBatch(6, 2, 1, 1, 1)
	corrupt[len(corrupt)-1] ^= 1
	if err := l.Append(corrupt); !errors.Is(err, ErrBadAppend) {
		t.Fatalf("bad crc: %v", err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := l.EpochEntries(); len(got) != 2 || got[0] != (EpochEntry{1, 0}) || got[1] != (EpochEntry{2, 5}) {
		t.Fatalf("epochs %v", got)
	}
	if got := string(mustFile(t, fsys, filepath.Join(testDir, LeaderEpochCheckpointName))); got != "0\n2\n1 0\n2 5\n" {
		t.Fatalf("leader-epoch-checkpoint %q", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, fsys, LogConfig{})
	defer l.Close()
	if got := readAll(t, l); len(got) != 3 || !bytes.Equal(got[2], b3) {
		t.Fatalf("after reopen: %d batches", len(got))
	}
}

// TestIndexBytesMatchApacheRules checks .index and .timeindex field by field
// against LogSegment.append's rules: an entry before each batch once more
// than 4096 bytes were written since the last one, keyed by the batch's last
// offset and pointing at its start; a time entry beside it holding the max
// timestamp so far; one more time entry on close; files trimmed on close.
func TestIndexBytesMatchApacheRules(t *testing.T) {
	fsys := NewMemFS()
	l := openTestLog(t, fsys, LogConfig{MaxIndexBytes: 4096})
	one := mkBatch(0, 1, 2, 400, 0)
	size := len(one) // every batch below has this size
	const batches = 40
	for k := 0; k < batches; k++ {
		if err := l.Append(mkBatch(int64(2*k), 1, 2, 400, int64(1000+k))); err != nil {
			t.Fatal(err)
		}
	}
	// While active, both files are preallocated.
	if n := len(mustFile(t, fsys, filepath.Join(testDir, "00000000000000000000.index"))); n != 4096 {
		t.Fatalf("active .index is %d bytes, want 4096 preallocated", n)
	}
	if n := len(mustFile(t, fsys, filepath.Join(testDir, "00000000000000000000.timeindex"))); n != 4092 {
		t.Fatalf("active .timeindex is %d bytes, want 4092 (whole 12-byte entries)", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	every := 4096/size + 1 // batches between entries
	var wantIdx, wantTime []byte
	for k := every; k < batches; k += every {
		wantIdx = binary.BigEndian.AppendUint32(wantIdx, uint32(2*k+1)) // last offset of batch k
		wantIdx = binary.BigEndian.AppendUint32(wantIdx, uint32(k*size))
		wantTime = binary.BigEndian.AppendUint64(wantTime, uint64(1000+k))
		wantTime = binary.BigEndian.AppendUint32(wantTime, uint32(2*k+1))
	}
	wantTime = binary.BigEndian.AppendUint64(wantTime, uint64(1000+batches-1))
	wantTime = binary.BigEndian.AppendUint32(wantTime, uint32(2*batches-1))
	gotIdx := mustFile(t, fsys, filepath.Join(testDir, "00000000000000000000.index"))
	gotTime := mustFile(t, fsys, filepath.Join(testDir, "00000000000000000000.timeindex"))
	if !bytes.Equal(gotIdx, wantIdx) {
		t.Fatalf(".index\n got %x\nwant %x", gotIdx, wantIdx)
	}
	if !bytes.Equal(gotTime, wantTime) {
		t.Fatalf(".timeindex\n got %x\nwant %x", gotTime, wantTime)
	}
	// Recovery rebuilds the same entries.
	l = openTestLog(t, fsys, LogConfig{MaxIndexBytes: 4096})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustFile(t, fsys, filepath.Join(testDir, "00000000000000000000.index")), wantIdx) ||
		!bytes.Equal(mustFile(t, fsys, filepath.Join(testDir, "00000000000000000000.timeindex")), wantTime) {
		t.Fatal("indexes differ after recovery")
	}
	offs, pos := DecodeOffsetIndex(0, append(bytes.Clone(wantIdx), make([]byte, 64)...))
	if len(offs) != len(wantIdx)/8 || offs[0] != int64(2*every+1) || pos[0] != int32(every*size) {
		t.Fatalf("DecodeOffsetIndex %v %v", offs, pos)
	}
	ts, toffs := DecodeTimeIndex(0, wantTime)
	if len(ts) != len(wantTime)/12 || toffs[len(toffs)-1] != 2*batches-1 {
		t.Fatalf("DecodeTimeIndex %v %v", ts, toffs)
	}
}

func TestSegmentRoll(t *testing.T) {
	fsys := NewMemFS()
	cfg := LogConfig{SegmentBytes: 2000, MaxIndexBytes: 1024, IndexIntervalBytes: 300}
	l := openTestLog(t, fsys, cfg)
	var want [][]byte
	for i := int64(0); i < 30; i++ {
		b := mkBatch(i, int32(1+i/10), 1, 200, 5000+i)
		want = append(want, b)
		if err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	names, _ := fsys.ReadDir(testDir)
	logs := 0
	for _, n := range names {
		if _, ok := parseSegmentName(n, logSuffix); ok {
			logs++
			if st, _ := fsys.Stat(filepath.Join(testDir, n)); st.Size() > 2000 {
				t.Fatalf("%s is %d bytes, above SegmentBytes", n, st.Size())
			}
		}
	}
	if logs < 3 {
		t.Fatalf("%d segments, want several: %v", logs, names)
	}
	// Closed segments have trimmed indexes; the active one preallocated.
	if n := len(mustFile(t, fsys, filepath.Join(testDir, segmentName(0, indexSuffix)))); n%8 != 0 || n >= 1024 {
		t.Fatalf("closed .index is %d bytes", n)
	}
	got := readAll(t, l)
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	// Reads never cross a segment.
	raw, _ := l.Read(0, 1<<20)
	if n, _ := batch.Walk(raw, func(batch.Header, []byte) error { return nil }); n != len(raw) || len(raw) > 2000 {
		t.Fatalf("read crossed a segment: %d bytes", len(raw))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, fsys, cfg)
	defer l.Close()
	if got := readAll(t, l); len(got) != 30 {
		t.Fatalf("after reopen %d batches", len(got))
	}
	if e, o := l.EndOffsetForEpoch(1); e != 10 || o != 1 {
		t.Fatalf("EndOffsetForEpoch(1) = %d, %d", e, o)
	}
}

func TestTruncateTo(t *testing.T) {
	fsys := NewMemFS()
	cfg := LogConfig{SegmentBytes: 1500, MaxIndexBytes: 1024, IndexIntervalBytes: 200}
	l := openTestLog(t, fsys, cfg)
	var want [][]byte
	for i := int64(0); i < 20; i++ {
		b := mkBatch(2*i, int32(1+i/5), 2, 150, 100+i)
		want = append(want, b)
		if err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	// Truncating at or past the end changes nothing.
	if err := l.TruncateTo(40); err != nil || l.EndOffset() != 40 {
		t.Fatalf("TruncateTo(end): %v, end %d", err, l.EndOffset())
	}
	// Mid-batch: the whole batch holding offset 25 (base 24) goes.
	if err := l.TruncateTo(25); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 24 || l.LastEpoch() != 3 {
		t.Fatalf("end %d epoch %d", l.EndOffset(), l.LastEpoch())
	}
	if got := l.EpochEntries(); len(got) != 3 || got[2] != (EpochEntry{3, 20}) {
		t.Fatalf("epochs %v", got)
	}
	// Into the first segment, dropping epoch 2 and 3.
	if err := l.TruncateTo(8); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 8 || l.LastEpoch() != 1 {
		t.Fatalf("end %d epoch %d", l.EndOffset(), l.LastEpoch())
	}
	// It is durable: a crash right now keeps exactly 4 batches.
	crashed := fsys.Crash(newRand(1))
	l2 := openTestLog(t, crashed, cfg)
	if got := readAll(t, l2); len(got) != 4 || !bytes.Equal(got[3], want[3]) {
		t.Fatalf("after crash %d batches", len(got))
	}
	l2.Close()
	// The log is appendable after truncation, with a new epoch.
	if err := l.Append(mkBatch(8, 5, 1, 10, 999)); err != nil {
		t.Fatal(err)
	}
	if got := l.EpochEntries(); len(got) != 2 || got[1] != (EpochEntry{5, 8}) {
		t.Fatalf("epochs %v", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, fsys, cfg)
	defer l.Close()
	if l.EndOffset() != 9 || l.LastEpoch() != 5 {
		t.Fatalf("reopened end %d epoch %d", l.EndOffset(), l.LastEpoch())
	}
}

func TestEndOffsetForEpoch(t *testing.T) {
	l := openTestLog(t, NewMemFS(), LogConfig{})
	defer l.Close()
	// Epochs 2@0, 4@10, 7@15; end 20.
	for _, b := range [][]byte{mkBatch(0, 2, 10, 1, 1), mkBatch(10, 4, 5, 1, 1), mkBatch(15, 7, 5, 1, 1)} {
		if err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		epoch     int32
		off       int64
		wantEpoch int32
	}{
		{7, 20, 7},   // latest epoch: the log end
		{4, 15, 4},   // a known epoch ends where the next starts
		{5, 15, 4},   // an unknown epoch between: the greatest below it
		{2, 10, 2},   // first epoch
		{1, 0, 1},    // below every epoch: start of the first known epoch
		{9, -1, -1},  // above every epoch: unknown
		{-1, -1, -1}, // undefined epoch: unknown
	} {
		off, e := l.EndOffsetForEpoch(c.epoch)
		if off != c.off || e != c.wantEpoch {
			t.Errorf("EndOffsetForEpoch(%d) = (%d, %d), want (%d, %d)", c.epoch, off, e, c.off, c.wantEpoch)
		}
	}
}

func TestSnapshotAndLogStart(t *testing.T) {
	fsys := NewMemFS()
	cfg := LogConfig{SegmentBytes: 1000, MaxIndexBytes: 1024}
	l := openTestLog(t, fsys, cfg)
	for i := int64(0); i < 20; i++ {
		if err := l.Append(mkBatch(i, int32(1+i/10), 1, 150, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	w, err := l.CreateSnapshot(SnapshotID{12, 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]byte("snapshot bytes")); err != nil {
		t.Fatal(err)
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteSegmentsBefore(12); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 12 {
		t.Fatalf("start %d", l.StartOffset())
	}
	if _, err := l.Read(11, 10); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if raw, err := l.Read(12, 10); err != nil || len(raw) == 0 {
		t.Fatalf("read at start: %v", err)
	}
	if got := l.EpochEntries(); got[0] != (EpochEntry{2, 12}) {
		t.Fatalf("epochs after start moved: %v", got)
	}
	// The oldest snapshot ends at the log start: asking for an older epoch
	// yields the snapshot's id (KafkaMetadataLog.endOffsetForEpoch).
	if off, e := l.EndOffsetForEpoch(1); off != 12 || e != 2 {
		t.Fatalf("EndOffsetForEpoch(1) = %d, %d", off, e)
	}
	first := l.segs[0].base
	if first == 0 || first > 12 {
		t.Fatalf("first segment %d", first)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// After a restart the log starts at the first segment, as in Apache.
	l = openTestLog(t, fsys, cfg)
	if l.StartOffset() != first || l.EndOffset() != 20 {
		t.Fatalf("reopened start %d end %d", l.StartOffset(), l.EndOffset())
	}
	// A follower installs a newer snapshot and empties its log.
	w, _ = l.CreateSnapshot(SnapshotID{50, 3})
	_ = w.Write([]byte("x"))
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := l.ResetTo(50); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 50 || l.EndOffset() != 50 || l.LastEpoch() != 3 {
		t.Fatalf("after reset: start %d end %d epoch %d", l.StartOffset(), l.EndOffset(), l.LastEpoch())
	}
	if ids := l.Snapshots(); len(ids) != 1 || ids[0] != (SnapshotID{50, 3}) {
		t.Fatalf("snapshots %v", ids)
	}
	if off, e := l.EndOffsetForEpoch(3); off != -1 || e != -1 {
		t.Fatalf("EndOffsetForEpoch on empty log = %d, %d", off, e)
	}
	if err := l.Append(mkBatch(50, 3, 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	l.Close()
}

func TestSnapshotAheadOfLogEmptiesIt(t *testing.T) {
	fsys := NewMemFS()
	l := openTestLog(t, fsys, LogConfig{})
	_ = l.Append(mkBatch(0, 1, 5, 1, 1))
	_ = l.Sync()
	// A crash between freezing a downloaded snapshot and ResetTo.
	w, _ := CreateSnapshot(fsys, testDir, SnapshotID{100, 4})
	_ = w.Write([]byte("x"))
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openTestLog(t, fsys, LogConfig{})
	defer l.Close()
	if l.StartOffset() != 100 || l.EndOffset() != 100 || l.LastEpoch() != 4 {
		t.Fatalf("start %d end %d epoch %d", l.StartOffset(), l.EndOffset(), l.LastEpoch())
	}
}

func TestErrorInjectionPoisonsLog(t *testing.T) {
	fsys := NewMemFS()
	l := openTestLog(t, fsys, LogConfig{})
	_ = l.Append(mkBatch(0, 1, 1, 1, 1))
	fsys.FailSync(1)
	if err := l.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Sync: %v", err)
	}
	// After a failed fsync nothing more is accepted (the page cache may lie).
	if err := l.Append(mkBatch(1, 1, 1, 1, 1)); err == nil {
		t.Fatal("append after failed fsync succeeded")
	}
	if err := l.Sync(); err == nil {
		t.Fatal("sync after failed fsync succeeded")
	}
	l.Close()
	l = openTestLog(t, fsys, LogConfig{})
	defer l.Close()
	fsys.FailWrite(1)
	if err := l.Append(mkBatch(l.EndOffset(), 1, 1, 1, 1)); !errors.Is(err, ErrInjected) {
		t.Fatalf("Append: %v", err)
	}
}

func TestLockDir(t *testing.T) {
	for name, fsys := range map[string]FS{"mem": NewMemFS(), "os": OSFS{}} {
		dir := t.TempDir()
		if err := fsys.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		unlock, err := LockDir(fsys, dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := LockDir(fsys, dir); !errors.Is(err, ErrLocked) {
			t.Fatalf("%s: second lock: %v", name, err)
		}
		if err := unlock(); err != nil {
			t.Fatal(err)
		}
		unlock, err = LockDir(fsys, dir)
		if err != nil {
			t.Fatalf("%s: relock: %v", name, err)
		}
		unlock()
	}
}

// Reads served from the recent-batch positions (a log that appended in
// this run) match those served from the index and the file (the same log
// reopened), through ring trims and truncations.
func TestRecentBatchPositionsMatchIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	fsys := NewMemFS()
	l := openTestLog(t, fsys, LogConfig{})
	next := int64(0)
	appendBatches := func(n int) {
		for range n {
			count := 1 + rng.IntN(4)
			if err := l.Append(mkBatch(next, 1, count, 10+rng.IntN(200), 1)); err != nil {
				t.Fatal(err)
			}
			next += int64(count)
		}
	}
	appendBatches(recentBatches + 500)
	cut := next - int64(rng.IntN(300)) - 1
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	next = l.EndOffset()
	appendBatches(700)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	live := make([][]byte, next)
	for off := int64(0); off < next; off++ {
		raw, err := l.Read(off, 1+rng.IntN(2000))
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		live[off] = raw
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openTestLog(t, fsys, LogConfig{})
	defer reopened.Close()
	for off := int64(0); off < next; off++ {
		raw, err := reopened.Read(off, 1)
		if err != nil {
			t.Fatalf("reopened Read(%d): %v", off, err)
		}
		first, err := batch.Decode(live[off])
		if err != nil {
			t.Fatalf("live Read(%d): %v", off, err)
		}
		want, _ := batch.Decode(raw)
		if first.BaseOffset != want.BaseOffset || !bytes.Equal(live[off][:len(raw)], raw) {
			t.Fatalf("offset %d: live read starts at batch %d, reopened at %d", off, first.BaseOffset, want.BaseOffset)
		}
	}
}
