package storage

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// segmentedLog writes 30 one-record batches of 200-byte values into
// segments of at most 2000 bytes, closes the log and returns the batch
// size and the segments' base offsets.
func segmentedLog(t *testing.T, fsys *MemFS, cfg LogConfig) (int, []int64) {
	t.Helper()
	l := openTestLog(t, fsys, cfg)
	var size int
	for i := int64(0); i < 30; i++ {
		b := mkBatch(i, 1, 1, 200, 5000+i)
		size = len(b)
		if err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, s := range l.segs {
		bases = append(bases, s.base)
	}
	if len(bases) < 3 || bases[1] < 5 {
		t.Fatalf("segments at %v; the test wants three or more of five or more batches", bases)
	}
	return size, bases
}

// flipByte flips one byte of a file on the MemFS, durably.
func flipByte(t *testing.T, fsys FS, name string, pos int64) {
	t.Helper()
	data := mustFile(t, fsys, name)
	data[pos] ^= 0x40
	if err := WriteFileAtomic(fsys, name, data); err != nil {
		t.Fatal(err)
	}
}

func segmentSizes(t *testing.T, fsys FS) map[string]int64 {
	t.Helper()
	names, _ := fsys.ReadDir(testDir)
	out := map[string]int64{}
	for _, n := range names {
		if strings.HasSuffix(n, logSuffix) {
			st, err := fsys.Stat(filepath.Join(testDir, n))
			if err != nil {
				t.Fatal(err)
			}
			out[n] = st.Size()
		}
	}
	return out
}

// A flipped byte in a closed segment is acknowledged data gone bad: the log
// refuses to open and names the file and offset, changing nothing; with
// TruncateCorrupt it is cut there, for good.
func TestCorruptClosedSegmentRefused(t *testing.T) {
	fsys := NewMemFS()
	cfg := LogConfig{SegmentBytes: 2000, MaxIndexBytes: 1024, IndexIntervalBytes: 300}
	size, _ := segmentedLog(t, fsys, cfg)
	seg := filepath.Join(testDir, segmentName(0, logSuffix))
	flipByte(t, fsys, seg, int64(4*size+size/2)) // inside batch 4's record: the CRC fails
	before := segmentSizes(t, fsys)

	_, err := OpenLog(fsys, testDir, cfg, testLogger(t))
	var cerr *CorruptLogError
	if !errors.As(err, &cerr) || !errors.Is(err, ErrCorruptLog) {
		t.Fatalf("OpenLog: %v, want a *CorruptLogError", err)
	}
	if cerr.File != seg || cerr.Offset != 4 || cerr.Pos != int64(4*size) || cerr.SegmentsAfter != len(before)-1 {
		t.Fatalf("error %+v", cerr)
	}
	for _, want := range []string{seg, "offset 4", "byte " + strconv.Itoa(4*size)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %q", err, want)
		}
	}
	if after := segmentSizes(t, fsys); len(after) != len(before) || after[segmentName(0, logSuffix)] != before[segmentName(0, logSuffix)] {
		t.Fatalf("refusing changed the segments: %v, was %v", after, before)
	}

	cut := cfg
	cut.TruncateCorrupt = true
	l := openTestLog(t, fsys, cut)
	if l.EndOffset() != 4 || len(readAll(t, l)) != 4 {
		t.Fatalf("with TruncateCorrupt: end %d", l.EndOffset())
	}
	l.Close()
	if got := segmentSizes(t, fsys); len(got) != 1 || got[segmentName(0, logSuffix)] != int64(4*size) {
		t.Fatalf("after the cut: %v", got)
	}
	l = openTestLog(t, fsys, cfg) // the cut is durable and the flag no longer needed
	defer l.Close()
	if l.EndOffset() != 4 {
		t.Fatalf("reopened end %d", l.EndOffset())
	}
}

// A missing middle segment leaves a gap: refused, or with TruncateCorrupt
// the log ends before it.
func TestSegmentGapRefused(t *testing.T) {
	fsys := NewMemFS()
	cfg := LogConfig{SegmentBytes: 2000, MaxIndexBytes: 1024, IndexIntervalBytes: 300}
	_, bases := segmentedLog(t, fsys, cfg)
	if err := fsys.Remove(filepath.Join(testDir, segmentName(bases[1], logSuffix))); err != nil {
		t.Fatal(err)
	}
	_, err := OpenLog(fsys, testDir, cfg, testLogger(t))
	var cerr *CorruptLogError
	if !errors.As(err, &cerr) || cerr.File != filepath.Join(testDir, segmentName(bases[2], logSuffix)) || cerr.Offset != bases[1] {
		t.Fatalf("OpenLog: %v", err)
	}
	cfg.TruncateCorrupt = true
	l := openTestLog(t, fsys, cfg)
	defer l.Close()
	if l.EndOffset() != bases[1] || len(segmentSizes(t, fsys)) != 1 {
		t.Fatalf("with TruncateCorrupt: end %d, segments %v", l.EndOffset(), segmentSizes(t, fsys))
	}
}

// A torn or flipped tail of the active segment is cut without being asked,
// as before: it may be a write the crash interrupted.
func TestTornActiveTailCut(t *testing.T) {
	for name, damage := range map[string]func(fsys *MemFS, seg string, size int64){
		"flipped": func(fsys *MemFS, seg string, size int64) { flipByte(t, fsys, seg, size+size/2) },
		"torn": func(fsys *MemFS, seg string, size int64) {
			data := mustFile(t, fsys, seg)
			_ = WriteFileAtomic(fsys, seg, data[:size+size/2])
		},
	} {
		t.Run(name, func(t *testing.T) {
			fsys := NewMemFS()
			cfg := LogConfig{SegmentBytes: 2000, MaxIndexBytes: 1024, IndexIntervalBytes: 300}
			size, bases := segmentedLog(t, fsys, cfg)
			last := bases[len(bases)-1]
			damage(fsys, filepath.Join(testDir, segmentName(last, logSuffix)), int64(size))
			l := openTestLog(t, fsys, cfg)
			defer l.Close()
			if l.EndOffset() != last+1 || len(readAll(t, l)) != int(last+1) {
				t.Fatalf("end %d, want the active segment cut after its first batch", l.EndOffset())
			}
		})
	}
}
