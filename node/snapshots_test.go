package node

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
)

// snapshotLog is a metadata log in a MemFS with helpers to append records.
type snapshotLog struct {
	t     *testing.T
	fs    *storage.MemFS
	log   *storage.Log
	image *metadata.Image // everything appended, applied
	ts    int64
}

func newSnapshotLog(t *testing.T) *snapshotLog {
	fsys := storage.NewMemFS()
	log, err := storage.OpenLog(fsys, "/meta/"+PartitionDir, storage.LogConfig{SegmentBytes: 4096}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return &snapshotLog{t: t, fs: fsys, log: log, image: metadata.NewImage(), ts: 1000}
}

func (l *snapshotLog) append(epoch int32, recs ...metadata.Record) {
	l.t.Helper()
	var rs []batch.Record
	for _, r := range recs {
		rs = append(rs, batch.Record{Value: metadata.EncodeValue(r)})
		l.image.Apply(r)
	}
	l.ts++
	raw := batch.Builder{BaseOffset: l.log.EndOffset(), LeaderEpoch: epoch, Timestamp: l.ts}.Encode(nil, rs)
	if err := l.log.Append(raw); err != nil {
		l.t.Fatal(err)
	}
}

func (l *snapshotLog) appendControl(epoch int32, v metadata.ControlValue) {
	l.t.Helper()
	key, value := metadata.EncodeControl(v)
	l.ts++
	raw := batch.Builder{BaseOffset: l.log.EndOffset(), LeaderEpoch: epoch, Timestamp: l.ts, Control: true}.
		Encode(nil, []batch.Record{{Key: key, Value: value}})
	if err := l.log.Append(raw); err != nil {
		l.t.Fatal(err)
	}
}

func (l *snapshotLog) topic(i int) {
	id := metadata.Uuid{byte(i >> 8), byte(i), 0x70}
	l.append(1, &metadata.TopicRecord{Name: fmt.Sprint("topic-", i), TopicId: id},
		&metadata.PartitionRecord{Version: 2, TopicId: id, PartitionId: 0, Replicas: []int32{1, 2}, Isr: []int32{1, 2}, Leader: 1})
}

func loadSnapshotImage(t *testing.T, log *storage.Log, id storage.SnapshotID) (*metadata.Image, metadata.SnapshotInfo) {
	t.Helper()
	r, err := log.OpenSnapshot(id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	im, info, err := metadata.LoadSnapshot(bufio.NewReader(&snapshotSource{r: r}))
	if err != nil {
		t.Fatal(err)
	}
	return im, info
}

func TestSnapshotterWritesByBytes(t *testing.T) {
	l := newSnapshotLog(t)
	s := NewSnapshotter(l.fs, l.log, SnapshotPolicy{MaxBytes: 2000, RetentionBytes: -1, RetentionMs: -1}, wallClock{}, goExecutor, staticVoters, nil, zerolog.Nop())
	l.append(1, &metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27})
	var hashes = map[int64][32]byte{}
	for i := range 60 {
		l.topic(i)
		hashes[l.log.EndOffset()] = l.image.Hash()
		s.MaybeSnapshot(l.log.EndOffset(), Yielding)
		s.Close() // wait, so each due snapshot is written before the next check
	}
	ids := l.log.Snapshots()
	if len(ids) < 3 {
		t.Fatalf("snapshots %v", ids)
	}
	for _, id := range ids {
		im, info := loadSnapshotImage(t, l.log, id)
		if want, ok := hashes[id.EndOffset]; !ok || im.Hash() != want || id.Epoch != 1 {
			t.Errorf("snapshot %v does not hold the image at its offset", id)
		}
		if info.LastContainedLogTimestamp <= 1000 {
			t.Errorf("snapshot %v: last contained timestamp %d", id, info.LastContainedLogTimestamp)
		}
	}
}

// TestSnapshotterWritesFromFrozenImage: with a state machine to freeze,
// each snapshot is written from a frozen copy of the live image while the
// test goes on appending and applying, changing partitions of topics the
// copy shares (go test -race checks that they are not shared unsafely),
// and each holds exactly the image at its offset.
func TestSnapshotterWritesFromFrozenImage(t *testing.T) {
	l := newSnapshotLog(t)
	frozen := 0
	freeze := func(lastOffset int64) *metadata.Image {
		if lastOffset != l.log.EndOffset()-1 {
			t.Errorf("asked to freeze at %d, the image ends at %d", lastOffset, l.log.EndOffset()-1)
			return nil
		}
		frozen++
		return l.image.Freeze()
	}
	// Gzip too, as a node does by default: its snapshots load back the same.
	s := NewSnapshotter(l.fs, l.log, SnapshotPolicy{MaxBytes: 2000, RetentionBytes: -1, RetentionMs: -1, Gzip: true}, wallClock{}, goExecutor, staticVoters, freeze, zerolog.Nop())
	l.append(1, &metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27})
	var hashes = map[int64][32]byte{}
	for i := range 80 {
		l.topic(i)
		for j := 0; j < i; j += 3 {
			id := metadata.Uuid{byte(j >> 8), byte(j), 0x70}
			l.append(1, &metadata.PartitionChangeRecord{TopicId: id, PartitionId: 0, Leader: int32(1 + i%2), Isr: []int32{1, 2}, LeaderRecoveryState: -1})
		}
		hashes[l.log.EndOffset()] = l.image.Hash()
		s.MaybeSnapshot(l.log.EndOffset(), Yielding) // not waited for: the next appends race with it
	}
	s.Close()
	ids := l.log.Snapshots()
	if len(ids) < 3 || frozen < len(ids) {
		t.Fatalf("snapshots %v from %d frozen images", ids, frozen)
	}
	for _, id := range ids {
		if im, _ := loadSnapshotImage(t, l.log, id); im.Hash() != hashes[id.EndOffset] {
			t.Errorf("snapshot %v does not hold the image at its offset", id)
		}
		if codecs := dataBatchCodecs(t, l.log, id); !slices.Equal(codecs, []string{"gzip"}) {
			t.Errorf("snapshot %v: data batch codecs %v, want gzip", id, codecs)
		}
	}
}

// dataBatchCodecs lists the distinct compression codecs of a snapshot's
// data batches.
func dataBatchCodecs(t *testing.T, log *storage.Log, id storage.SnapshotID) []string {
	t.Helper()
	r, err := log.OpenSnapshot(id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	raw, err := io.ReadAll(&snapshotSource{r: r})
	if err != nil {
		t.Fatal(err)
	}
	var codecs []string
	if _, err := batch.Walk(raw, func(h batch.Header, _ []byte) error {
		if c := h.Codec(); !h.IsControl() && !slices.Contains(codecs, c) {
			codecs = append(codecs, c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return codecs
}

func TestSnapshotterTimerNeedsNewRecords(t *testing.T) {
	l := newSnapshotLog(t)
	s := NewSnapshotter(l.fs, l.log, SnapshotPolicy{MaxBytes: 1 << 30, IntervalMs: 1000, RetentionBytes: -1, RetentionMs: -1}, wallClock{}, goExecutor, staticVoters, nil, zerolog.Nop())
	clock := time.Unix(100, 0)
	s.now = func() time.Time { return clock }
	s.lastSnapshot = clock
	l.append(1, &metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27})
	s.MaybeSnapshot(l.log.EndOffset(), Yielding)
	s.Close()
	if len(l.log.Snapshots()) != 0 {
		t.Fatal("snapshot before the interval")
	}
	clock = clock.Add(time.Second)
	s.MaybeSnapshot(l.log.EndOffset(), Yielding) // no new records since the last check, but some since the last snapshot
	s.Close()
	if ids := l.log.Snapshots(); len(ids) != 1 || ids[0].EndOffset != 1 {
		t.Fatalf("snapshots %v", ids)
	}
	clock = clock.Add(time.Hour)
	s.MaybeSnapshot(l.log.EndOffset(), Yielding)
	s.Close()
	if ids := l.log.Snapshots(); len(ids) != 1 {
		t.Fatalf("snapshot without new records: %v", ids)
	}
}

// TestSnapshotterOnlyWholeCommittedBatches: the snapshot ends at the last
// batch wholly below the high watermark, and never inside a transaction.
func TestSnapshotterOnlyWholeCommittedBatches(t *testing.T) {
	l := newSnapshotLog(t)
	s := NewSnapshotter(l.fs, l.log, SnapshotPolicy{MaxBytes: 1, RetentionBytes: -1, RetentionMs: -1}, wallClock{}, goExecutor, staticVoters, nil, zerolog.Nop())
	l.append(1, &metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27})
	l.append(2, &metadata.BeginTransactionRecord{}, &metadata.TopicRecord{Name: "a", TopicId: metadata.Uuid{1}})
	l.append(2, &metadata.NoOpRecord{}, &metadata.EndTransactionRecord{})
	s.MaybeSnapshot(2, Yielding) // inside the first batch of the transaction: only offset 0 is whole
	s.Close()
	if ids := l.log.Snapshots(); len(ids) != 1 || ids[0] != (storage.SnapshotID{EndOffset: 1, Epoch: 1}) {
		t.Fatalf("snapshots %v", ids)
	}
	s.MaybeSnapshot(3, Yielding) // the transaction is open at 3
	s.Close()
	if ids := l.log.Snapshots(); len(ids) != 1 {
		t.Fatalf("snapshot inside a transaction: %v", ids)
	}
	s.MaybeSnapshot(5, Yielding)
	s.Close()
	ids := l.log.Snapshots()
	if len(ids) != 2 || ids[1] != (storage.SnapshotID{EndOffset: 5, Epoch: 2}) {
		t.Fatalf("snapshots %v", ids)
	}
	if im, _ := loadSnapshotImage(t, l.log, ids[1]); im.Hash() != l.image.Hash() {
		t.Fatal("snapshot after the transaction differs")
	}
}

// TestSnapshotterRetention: with no room to spare only the newest
// snapshot stays, the log start moves up to it and segments below go;
// nothing the newest snapshot does not cover is deleted; a restart rebuilds
// the same image from what is left.
func TestSnapshotterRetention(t *testing.T) {
	l := newSnapshotLog(t)
	voters := &metadata.VotersRecord{Voters: []metadata.VotersRecordVoter{{VoterId: 1}}}
	// The quorum core's voter set (here: one from the first offsets on).
	controlAt := func(offset int64) (int16, *metadata.VotersRecord) { return 1, voters }
	s := NewSnapshotter(l.fs, l.log, SnapshotPolicy{MaxBytes: 3000, RetentionBytes: 0, RetentionMs: -1}, wallClock{}, goExecutor, controlAt, nil, zerolog.Nop())
	l.append(1, &metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27})
	l.appendControl(1, &metadata.KRaftVersionRecord{KRaftVersion: 1})
	l.appendControl(1, voters)
	for i := range 100 {
		l.topic(i)
		s.MaybeSnapshot(l.log.EndOffset(), Yielding)
		s.Close()
	}
	ids := l.log.Snapshots()
	if len(ids) != 1 {
		t.Fatalf("snapshots %v", ids)
	}
	latest := ids[0]
	if start := l.log.StartOffset(); start != latest.EndOffset {
		t.Fatalf("log start %d, newest snapshot %v", start, latest)
	}
	if names, _ := l.fs.ReadDir(l.log.Dir()); countSuffix(names, ".log") < 1 {
		t.Fatalf("files %v", names)
	}
	_, info := loadSnapshotImage(t, l.log, latest)
	if info.KRaftVersion != 1 || info.Voters == nil || info.Voters.Voters[0].VoterId != 1 {
		t.Fatalf("snapshot header state %+v", info)
	}
	im, err := rebuildImage(l.log, l.log.EndOffset())
	if err != nil || im.Hash() != l.image.Hash() {
		t.Fatalf("rebuild after retention: %v", err)
	}
}

func TestSnapshotterRetentionByAge(t *testing.T) {
	l := newSnapshotLog(t)
	policy := SnapshotPolicy{MaxBytes: 1 << 30, RetentionBytes: -1, RetentionMs: 60_000}
	l.append(1, &metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27})
	for i := range 3 {
		l.topic(i)
		im, err := rebuildImage(l.log, l.log.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		// Snapshot i contains records stamped i minutes after the epoch.
		point := snapshotPoint{id: storage.SnapshotID{EndOffset: l.log.EndOffset(), Epoch: 1}, timestamp: int64(i) * 60_000}
		if _, err := writeSnapshot(l.log, point, im, quorumState{}, time.Now(), false, &snapshotScratch{}); err != nil {
			t.Fatal(err)
		}
	}
	// At 150 s snapshots 0 (150 s old) and 1 (90 s old) are past the
	// minute and go with the log they cover; the newest always stays.
	if err := cleanSnapshots(l.fs, l.log, policy, time.UnixMilli(150_000), zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if ids := l.log.Snapshots(); len(ids) != 1 || ids[0].EndOffset != l.log.EndOffset() {
		t.Fatalf("snapshots %v", ids)
	}
}

func countSuffix(names []string, suffix string) int {
	n := 0
	for _, name := range names {
		if len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix {
			n++
		}
	}
	return n
}

// staticVoters is the voter set of a static quorum at every offset: no
// kraft.version, no VotersRecord in snapshot headers.
func staticVoters(int64) (int16, *metadata.VotersRecord) { return 0, nil }
