package node

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
)

// tinyRecords is how many NoOpRecords the memory tests pack into one gzip
// batch: 12 or 13 bytes each, so 19 MB inflated from a batch of about
// 2.3 MB. They build nothing, so what loading them holds is all overhead.
// (The batch held 4.5 million; a third is as telling and quicker.)
const tinyRecords = 1_500_000

// loadOverheadLimit is the most the heap may grow while such a batch is
// loaded or replayed: a constant, whatever the record count. Holding every
// record of the batch at once, as bare batch.Records alone, takes 88 bytes
// a record: 126 MiB here.
const loadOverheadLimit = 32 << 20

// tinyGzipBatch is one gzip batch of n NoOpRecords at base.
func tinyGzipBatch(base int64, epoch int32, n int) []byte {
	value := metadata.EncodeValue(&metadata.NoOpRecord{})
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i].Value = value
	}
	var c batch.Compressor
	return c.Encode(nil, batch.Builder{BaseOffset: base, LeaderEpoch: epoch, Timestamp: 1}, recs)
}

// peakHeap runs fn while sampling the heap, and returns how far HeapInuse
// rose above where it stood before fn.
func peakHeap(t *testing.T, fn func()) uint64 {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var (
		peak uint64
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	sample()
	if peak < base {
		return 0
	}
	return peak - base
}

// TestLoadSnapshotMemoryIsBounded loads, through Disk.LoadSnapshot as a
// starting node does, a snapshot file on the real disk whose one data
// batch is gzip holding millions of tiny records: the heap must grow by a
// constant, not by the record count (issue 34, defect 6).
func TestLoadSnapshotMemoryIsBounded(t *testing.T) {
	log, err := storage.OpenLog(storage.OSFS{}, t.TempDir(), storage.LogConfig{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	id := storage.SnapshotID{EndOffset: 2 + tinyRecords, Epoch: 1}
	w, err := log.CreateSnapshot(id)
	if err != nil {
		t.Fatal(err)
	}
	hk, hv := metadata.EncodeControl(&metadata.SnapshotHeaderRecord{})
	fk, fv := metadata.EncodeControl(&metadata.SnapshotFooterRecord{})
	for _, raw := range [][]byte{
		batch.Builder{LeaderEpoch: 1, Control: true}.Encode(nil, []batch.Record{{Key: hk, Value: hv}}),
		tinyGzipBatch(1, 1, tinyRecords),
		batch.Builder{BaseOffset: 1 + tinyRecords, LeaderEpoch: 1, Control: true}.Encode(nil, []batch.Record{{Key: fk, Value: fv}}),
	} {
		if err := w.Write(raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	var info metadata.SnapshotInfo
	grew := peakHeap(t, func() {
		_, info, err = (&Disk{Log: log}).LoadSnapshot(id)
	})
	if err != nil {
		t.Fatal(err)
	}
	if info.Records != tinyRecords {
		t.Fatalf("loaded %d records, want %d", info.Records, tinyRecords)
	}
	t.Logf("%d records from a %d-byte snapshot: heap grew by at most %d KiB", info.Records, info.Bytes, grew>>10)
	if grew > loadOverheadLimit {
		t.Fatalf("loading the snapshot grew the heap by %d MiB, limit %d MiB", grew>>20, loadOverheadLimit>>20)
	}
}

// TestReplayGzipBatchMemoryIsBounded is the same for a gzip batch in the
// log itself, as a leader may send it and as replay at start-up reads it.
func TestReplayGzipBatchMemoryIsBounded(t *testing.T) {
	log, err := storage.OpenLog(storage.OSFS{}, t.TempDir(), storage.LogConfig{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if err := log.Append(tinyGzipBatch(0, 1, tinyRecords)); err != nil {
		t.Fatal(err)
	}
	var seen, reached int64
	grew := peakHeap(t, func() {
		reached, err = ForEachLogRecord(log, 0, log.EndOffset(), func(_ int64, rec metadata.Record, _ batch.Record) error {
			if rec != nil {
				seen++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != tinyRecords || reached != tinyRecords {
		t.Fatalf("saw %d records up to %d, want %d", seen, reached, tinyRecords)
	}
	t.Logf("%d records replayed: heap grew by at most %d KiB", seen, grew>>10)
	if grew > loadOverheadLimit {
		t.Fatalf("replaying the batch grew the heap by %d MiB, limit %d MiB", grew>>20, loadOverheadLimit>>20)
	}
}
