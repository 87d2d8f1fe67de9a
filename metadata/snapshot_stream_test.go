package metadata

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/storage/batch"
)

func imageOf(t *testing.T, recs []Record) *Image {
	t.Helper()
	im := NewImage()
	applyAll(t, im, recs)
	return im
}

// TestImageRecordsRebuildImage: for random images, the records of Records
// and of a snapshot file written from the image rebuild an image with the
// same hash, with metadata.version first; a writer reusing the buffers of
// an earlier snapshot writes the same bytes.
func TestImageRecordsRebuildImage(t *testing.T) {
	shared := &SnapshotBuffers{}
	for seed := range uint64(300) {
		log := randomLog(seed, 150)
		im := imageOf(t, log)
		if im.InTransaction() {
			applyAll(t, im, []Record{&AbortTransactionRecord{}})
		}
		recs, err := im.Records()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if f, ok := recs[0].(*FeatureLevelRecord); !ok || f.Name != "metadata.version" || f.Version != 0 {
			t.Fatalf("seed %d: first record %T %+v", seed, recs[0], recs[0])
		}
		if got := imageOf(t, recs); got.Hash() != im.Hash() {
			t.Fatalf("seed %d: image rebuilt from Records differs", seed)
		}
		var buf bytes.Buffer
		opts := SnapshotOptions{Epoch: 3, LastContainedLogTimestamp: 1234, Timestamp: 99}
		if seed%2 == 1 {
			opts.Buffers = shared // left by the seed before: the output must not show it
		}
		n, err := WriteSnapshot(&buf, im, opts)
		if err != nil || n != int64(buf.Len()) {
			t.Fatalf("seed %d: WriteSnapshot %d bytes of %d: %v", seed, n, buf.Len(), err)
		}
		loaded, info, err := LoadSnapshot(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if loaded.Hash() != im.Hash() {
			t.Fatalf("seed %d: image loaded from the snapshot differs", seed)
		}
		if info.Epoch != 3 || info.LastContainedLogTimestamp != 1234 || info.Records != int64(len(recs)) || info.Bytes != n {
			t.Fatalf("seed %d: info %+v", seed, info)
		}
		// The streaming writer lays the file out as EncodeSnapshotFile does.
		want := EncodeSnapshotFile(SnapshotFile{Epoch: 3, LastContainedLogTimestamp: 1234, Records: recs}, 99)
		if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("seed %d: WriteSnapshot and EncodeSnapshotFile differ", seed)
		}
	}
}

// TestSnapshotPlusLogReplaysLikeLog: a snapshot taken anywhere outside a
// transaction, plus the rest of the log, gives the image of the whole log.
func TestSnapshotPlusLogReplaysLikeLog(t *testing.T) {
	for seed := range uint64(200) {
		log := randomLog(seed, 200)
		whole := imageOf(t, log)
		prefix := NewImage()
		for cut := range log {
			applyAll(t, prefix, log[cut:cut+1])
			if prefix.InTransaction() || (seed+uint64(cut))%37 != 0 {
				continue
			}
			var buf bytes.Buffer
			if _, err := WriteSnapshot(&buf, prefix, SnapshotOptions{}); err != nil {
				t.Fatalf("seed %d cut %d: %v", seed, cut, err)
			}
			im, _, err := LoadSnapshot(&buf)
			if err != nil {
				t.Fatalf("seed %d cut %d: %v", seed, cut, err)
			}
			applyAll(t, im, log[cut+1:])
			if im.Hash() != whole.Hash() {
				t.Fatalf("seed %d: snapshot at record %d plus the rest of the log differs from the log", seed, cut)
			}
		}
	}
}

func TestWriteSnapshotKRaftVersionAndVoters(t *testing.T) {
	im := imageOf(t, clusterRecords())
	voters := &VotersRecord{Voters: []VotersRecordVoter{{VoterId: 1, VoterDirectoryId: Uuid{1},
		Endpoints:           []VotersRecordEndpoint{{Name: "CONTROLLER", Host: "localhost", Port: 9093}},
		KRaftVersionFeature: VotersRecordKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1}}}}
	var buf bytes.Buffer
	if _, err := WriteSnapshot(&buf, im, SnapshotOptions{Epoch: 2, KRaftVersion: 1, Voters: voters, Timestamp: 5}); err != nil {
		t.Fatal(err)
	}
	f, err := DecodeSnapshotFile(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Extra) != 2 || f.Extra[0].(*KRaftVersionRecord).KRaftVersion != 1 || !reflect.DeepEqual(f.Extra[1], voters) {
		t.Fatalf("header batch control records: %+v", f.Extra)
	}
	_, info, err := LoadSnapshot(bytes.NewReader(buf.Bytes()))
	if err != nil || info.KRaftVersion != 1 || !reflect.DeepEqual(info.Voters, voters) {
		t.Fatalf("info %+v, %v", info, err)
	}
	// At kraft.version 0 the voters are not written.
	buf.Reset()
	WriteSnapshot(&buf, im, SnapshotOptions{Voters: voters})
	if f, _ := DecodeSnapshotFile(buf.Bytes()); len(f.Extra) != 0 {
		t.Fatalf("kraft.version 0 wrote %+v", f.Extra)
	}
}

// TestReadSnapshotHeaderReadsOnlyTheHeader: the header reader answers
// from the first batch alone, so a snapshot cut short after it still
// answers (a whole read fails), and it reads no byte past that batch.
func TestReadSnapshotHeaderReadsOnlyTheHeader(t *testing.T) {
	im := imageOf(t, clusterRecords())
	voters := &VotersRecord{Voters: []VotersRecordVoter{{VoterId: 1, VoterDirectoryId: Uuid{1},
		Endpoints: []VotersRecordEndpoint{{Name: "CONTROLLER", Host: "localhost", Port: 9093}}}}}
	var buf bytes.Buffer
	opts := SnapshotOptions{Epoch: 7, LastContainedLogTimestamp: 1234, KRaftVersion: 1, Voters: voters, Gzip: true}
	if _, err := WriteSnapshot(&buf, im, opts); err != nil {
		t.Fatal(err)
	}
	first, err := batch.NewSliceReader(buf.Bytes(), 0).NextHeader()
	if err != nil {
		t.Fatal(err)
	}
	headerBatch := first.Size()
	cut := buf.Bytes()[:headerBatch+10]
	if _, err := ReadSnapshot(bytes.NewReader(cut), func(Record) error { return nil }); err == nil {
		t.Fatal("a snapshot cut short read whole")
	}
	src := &countingReader{r: bytes.NewReader(cut)}
	info, err := ReadSnapshotHeader(src)
	if err != nil {
		t.Fatal(err)
	}
	if info.Epoch != 7 || info.LastContainedLogTimestamp != 1234 || info.KRaftVersion != 1 || !reflect.DeepEqual(info.Voters, voters) {
		t.Fatalf("header %+v", info)
	}
	if src.n > headerBatch {
		t.Fatalf("read %d bytes, the header batch is %d", src.n, headerBatch)
	}
	// A file that starts with data, or is empty, has no header.
	for name, b := range map[string][]byte{"data first": buf.Bytes()[headerBatch:], "empty": nil} {
		if _, err := ReadSnapshotHeader(bytes.NewReader(b)); !errors.Is(err, ErrSnapshotFormat) {
			t.Errorf("%s: %v, want ErrSnapshotFormat", name, err)
		}
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestWriteSnapshotBatchLimit: data batches stay within 8 MiB and each
// holds as many records as fit.
func TestWriteSnapshotBatchLimit(t *testing.T) {
	im := imageOf(t, clusterRecords())
	big := strings.Repeat("x", 300<<10)
	for i := range 60 {
		applyAll(t, im, []Record{&ConfigRecord{ResourceType: 4, ResourceName: "1", Name: "k" + itoa(i), Value: &big}})
	}
	var buf bytes.Buffer
	if _, err := WriteSnapshot(&buf, im, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	if _, err := batch.Walk(buf.Bytes(), func(h batch.Header, raw []byte) error {
		if !h.IsControl() {
			sizes = append(sizes, len(raw))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 3 {
		t.Fatalf("data batch sizes %v", sizes)
	}
	for i, s := range sizes {
		if s > MaxBatchBytes || (i < len(sizes)-1 && s+300<<10 <= MaxBatchBytes) {
			t.Errorf("data batch sizes %v", sizes)
		}
	}
	loaded, _, err := LoadSnapshot(&buf)
	if err != nil || loaded.Hash() != im.Hash() {
		t.Fatalf("reload: %v", err)
	}
}

// TestWriteSnapshotReusesItsBuffers: with SnapshotBuffers kept from an
// earlier snapshot, writing one allocates a few dozen times in all, not once per
// record; at a million partitions that garbage was 129 MiB a snapshot.
func TestWriteSnapshotReusesItsBuffers(t *testing.T) {
	im := imageOf(t, clusterRecords())
	addTopics := func(from, to int) {
		for i := from; i < to; i++ {
			id := Uuid{byte(i), byte(i >> 8), 7}
			applyAll(t, im, []Record{&TopicRecord{Name: "t" + itoa(i), TopicId: id}})
			for p := range int32(10) {
				applyAll(t, im, []Record{&PartitionRecord{PartitionId: p, TopicId: id, Replicas: []int32{1}, Isr: []int32{1}, Leader: 1}})
			}
			value := "86400000"
			applyAll(t, im, []Record{&ConfigRecord{ResourceType: 2, ResourceName: "t" + itoa(i), Name: "retention.ms", Value: &value}})
		}
	}
	addTopics(0, 200)
	var bufs SnapshotBuffers
	write := func() {
		if _, err := WriteSnapshot(io.Discard, im, SnapshotOptions{Buffers: &bufs}); err != nil {
			t.Fatal(err)
		}
	}
	write()
	if allocs := testing.AllocsPerRun(3, write); allocs > 100 {
		t.Errorf("%.0f allocations for a snapshot of 2,000 partitions", allocs)
	}
	// Nor anything that grows with the image, such as the sorted topic
	// ids (16 bytes a topic) or a record per config (about 100 bytes):
	// twice the topics, after the buffers have grown to them, allocate
	// no more than a few bytes more (the least of three writes each).
	allocated := func() uint64 {
		least := uint64(math.MaxUint64)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			write()
			runtime.ReadMemStats(&after)
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		return least
	}
	small := allocated()
	addTopics(200, 400)
	write()
	if large := allocated(); large > small+400 {
		t.Errorf("a snapshot of 400 topics and their configs allocated %d bytes, of 200 %d", large, small)
	}
}

func TestWriteRecordsRefusesLoss(t *testing.T) {
	base := clusterRecords()
	cases := map[string][]Record{
		"no metadata.version": base[1:],
		"SCRAM before 3.5-IV2": {&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 10},
			&UserScramCredentialRecord{Name: "u", Mechanism: 1}},
		"delegation token before 3.6-IV2": {&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 13},
			&DelegationTokenRecord{TokenId: "t"}},
		"controller before 3.7": append([]Record{&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 14}},
			&RegisterControllerRecord{ControllerId: 1}),
		"directories before 3.7-IV2": append([]Record{&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 16},
			&TopicRecord{Name: "a", TopicId: Uuid{1}}},
			&PartitionRecord{TopicId: Uuid{1}, PartitionId: 0, Replicas: []int32{1}, Directories: []Uuid{{7}}}),
		"log dirs before 3.7-IV2": append([]Record{&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 16}},
			&RegisterBrokerRecord{Version: 3, BrokerId: 1, LogDirs: []Uuid{{7}}}),
	}
	for name, recs := range cases {
		im := imageOf(t, recs)
		if _, err := im.Records(); !errors.Is(err, ErrUnwritable) {
			t.Errorf("%s: Records: %v", name, err)
		}
		if _, err := WriteSnapshot(&bytes.Buffer{}, im, SnapshotOptions{}); !errors.Is(err, ErrUnwritable) {
			t.Errorf("%s: WriteSnapshot: %v", name, err)
		}
	}
}

// TestReadSnapshotApacheFiles: the streaming reader agrees with
// DecodeSnapshotFile on Apache-written files and refuses torn ones.
func TestReadSnapshotApacheFiles(t *testing.T) {
	paths, _ := filepath.Glob("../compat/testdata/apache-*/__cluster_metadata-0/*.checkpoint")
	more, _ := filepath.Glob("../compat/testdata/apache-*/bootstrap.checkpoint")
	paths = append(paths, more...)
	if len(paths) == 0 {
		t.Fatal("no Apache golden files under compat/testdata")
	}
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := DecodeSnapshotFile(raw)
		if err != nil {
			t.Fatal(err)
		}
		var got []Record
		info, err := ReadSnapshot(bytes.NewReader(raw), func(r Record) error { got = append(got, r); return nil })
		if err != nil || !reflect.DeepEqual(got, want.Records) || info.Epoch != want.Epoch || info.Bytes != int64(len(raw)) {
			t.Errorf("%s: %v, %d records, info %+v", path, err, len(got), info)
		}
		if _, err := ReadSnapshot(bytes.NewReader(raw[:len(raw)-3]), func(Record) error { return nil }); !errors.Is(err, ErrSnapshotFormat) {
			t.Errorf("%s: torn file: %v", path, err)
		}
	}
}
