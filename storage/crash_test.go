package storage

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/kraftd/kraftd/storage/batch"
)

var crashSeeds = flag.Int("storage.crashseeds", 300, "number of seeds TestCrashRecovery runs")

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// crashModel is what the test knows about the log: every batch that may be
// in it, in order, and how many of them are certainly durable.
type crashModel struct {
	start   int64
	batches [][]byte
	durable int
	epoch   int32
}

func (m *crashModel) end() int64 {
	if len(m.batches) == 0 {
		return m.start
	}
	h, _ := batch.ReadHeader(m.batches[len(m.batches)-1])
	return h.NextOffset()
}

// sameBatch compares a recovered batch with the appended one. Bytes 12-15
// (the leader epoch) are outside Kafka's CRC, so a bit flip there in an
// unsynced batch is undetectable by design; only durable batches must match
// exactly.
func sameBatch(got, want []byte, durable bool) bool {
	if durable || len(got) != len(want) {
		return bytes.Equal(got, want)
	}
	return bytes.Equal(got[:12], want[:12]) && bytes.Equal(got[16:], want[16:])
}

// TestCrashRecovery appends, syncs, truncates, rolls and installs snapshots
// at random on a MemFS, with injected write and fsync errors, then cuts the
// power at a random moment and reopens: every fsynced batch must be there,
// nothing that was not appended may be served, and the log must take new
// appends. Replay one seed with -run 'TestCrashRecovery/seed=N'.
func TestCrashRecovery(t *testing.T) {
	for seed := 0; seed < *crashSeeds; seed++ {
		t.Run("seed="+itoa(seed), func(t *testing.T) { runCrashSeed(t, uint64(seed)) })
	}
}

func itoa(i int) string { return string(appendInt(nil, i)) }

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

func runCrashSeed(t *testing.T, seed uint64) {
	rng := newRand(seed)
	cfg := LogConfig{SegmentBytes: int64(600 + rng.IntN(3000)), MaxIndexBytes: 96 + rng.IntN(400), IndexIntervalBytes: 50 + rng.IntN(300)}
	fsys := NewMemFS()
	l := openTestLog(t, fsys, cfg)
	m := &crashModel{epoch: 1}
	steps := 5 + rng.IntN(60)
	for step := 0; step < steps; step++ {
		if rng.IntN(12) == 0 {
			if rng.IntN(2) == 0 {
				fsys.FailWrite(1 + rng.IntN(4))
			} else {
				fsys.FailSync(1 + rng.IntN(3))
			}
		}
		var err error
		switch op := rng.IntN(20); {
		case op < 11: // append one to three batches
			if rng.IntN(5) == 0 {
				m.epoch++
			}
			var raw []byte
			var added [][]byte
			off := m.end()
			for n := 1 + rng.IntN(3); n > 0; n-- {
				recs := 1 + rng.IntN(4)
				b := mkBatch(off, m.epoch, recs, rng.IntN(300), int64(step))
				raw = append(raw, b...)
				added = append(added, b)
				off += int64(recs)
			}
			err = l.Append(raw)
			// Even a failed append may have reached the file.
			m.batches = append(m.batches, added...)
		case op < 16:
			if err = l.Sync(); err == nil {
				m.durable = len(m.batches)
			}
		case op < 18 && len(m.batches) > 0: // truncate at a batch boundary
			k := rng.IntN(len(m.batches))
			h, _ := batch.ReadHeader(m.batches[k])
			err = l.TruncateTo(h.BaseOffset)
			if err == nil {
				m.batches, m.durable = m.batches[:k], k
			} else {
				m.durable = min(m.durable, k)
			}
		case op < 19: // clean restart
			if err = l.Close(); err == nil {
				m.durable = len(m.batches)
				l, err = OpenLog(fsys, testDir, cfg, testLogger(t))
			}
		default: // install a snapshot ahead of the log and reset to it
			fsys.FailWrite(0)
			fsys.FailSync(0)
			m.epoch++
			id := SnapshotID{m.end() + int64(rng.IntN(5)), m.epoch}
			var w *SnapshotWriter
			if w, err = l.CreateSnapshot(id); err == nil {
				_ = w.Write([]byte("snapshot"))
				if err = w.Freeze(); err == nil {
					err = l.ResetTo(id.EndOffset)
				}
			}
			if err != nil {
				t.Fatalf("step %d: snapshot install: %v", step, err)
			}
			m.start, m.batches, m.durable = id.EndOffset, nil, 0
		}
		if err != nil {
			break // the log is poisoned; the process would crash now
		}
	}
	fsys.FailWrite(0)
	fsys.FailSync(0)
	crashed := fsys.Crash(rng)
	l2 := openTestLog(t, crashed, cfg)
	defer l2.Close()
	if l2.StartOffset() != m.start {
		t.Fatalf("start %d, want %d", l2.StartOffset(), m.start)
	}
	got := readAll(t, l2)
	if len(got) < m.durable {
		t.Fatalf("lost fsynced data: %d batches survived, %d were durable\n%s", len(got), m.durable, fsys)
	}
	if len(got) > len(m.batches) {
		t.Fatalf("%d batches served, only %d appended", len(got), len(m.batches))
	}
	for i := range got {
		if !sameBatch(got[i], m.batches[i], i < m.durable) {
			t.Fatalf("batch %d differs from what was appended (durable %v)", i, i < m.durable)
		}
	}
	// The recovered log takes appends again and keeps them.
	next := mkBatch(l2.EndOffset(), max(l2.LastEpoch(), m.epoch), 1, 10, 1)
	if err := l2.Append(next); err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
	if err := l2.Sync(); err != nil {
		t.Fatal(err)
	}
	l3 := openTestLog(t, crashed.Crash(rng), cfg)
	defer l3.Close()
	again := readAll(t, l3)
	if len(again) != len(got)+1 || !bytes.Equal(again[len(again)-1], next) {
		t.Fatalf("after second crash: %d batches, want %d", len(again), len(got)+1)
	}
}
