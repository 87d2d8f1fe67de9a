package node

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
)

// The shape of the scale benchmark's image (compat.BenchmarkControllerScale):
// 1,000 brokers with one log directory each, 100,000 topics of 10
// partitions, three replicas.
const (
	snapBenchBrokers    = 1000
	snapBenchTopics     = 100_000
	snapBenchPartitions = 10
)

// BenchmarkWriteSnapshotMillion writes the snapshot of a million-partition
// image as the leader does (writeSnapshot: gzipped data batches, a real
// file, fsynced and renamed), reusing the scratch memory between
// snapshots as a Snapshotter does. ms is the wall time of one snapshot,
// cpu_ms the CPU time it took on its thread (on Linux; what to compare on
// a busy machine), gcs the collections during it. Run it alone:
//
//	go test -run '^$' -bench BenchmarkWriteSnapshotMillion -benchtime 3x ./node
func BenchmarkWriteSnapshotMillion(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	im := snapBenchImage(b)
	log, err := storage.OpenLog(storage.OSFS{}, b.TempDir(), storage.LogConfig{}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	var scratch snapshotScratch
	state := quorumState{kraftVersion: 1}
	var size int64
	// One snapshot first, as a node has written before: its scratch
	// memory is kept (scratch_MiB, what the node holds between
	// snapshots), so B/op is what each snapshot leaves to collect.
	heapBefore := liveHeap()
	warm := snapshotPoint{id: storage.SnapshotID{EndOffset: 1_100_000, Epoch: 1}}
	if _, err := writeSnapshot(log, warm, im, state, time.UnixMilli(1_700_000_000_000), true, &scratch); err != nil {
		b.Fatal(err)
	}
	scratchMiB := float64(liveHeap()-heapBefore) / (1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	var wall, cpu time.Duration
	var gcs uint32
	for i := range b.N {
		point := snapshotPoint{id: storage.SnapshotID{EndOffset: int64(1_200_000 + i), Epoch: 1}, timestamp: 1_700_000_000_000}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		gc0 := ms.NumGC
		start, cpu0 := time.Now(), threadCPU()
		size, err = writeSnapshot(log, point, im, state, time.UnixMilli(1_700_000_000_000), true, &scratch)
		if err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
		cpu += threadCPU() - cpu0
		runtime.ReadMemStats(&ms)
		gcs += ms.NumGC - gc0
		if err := log.DeleteSnapshot(point.id); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(wall.Milliseconds())/n, "ms")
	b.ReportMetric(float64(cpu.Milliseconds())/n, "cpu_ms")
	b.ReportMetric(float64(gcs)/n, "gcs")
	b.ReportMetric(scratchMiB, "scratch_MiB")
	b.ReportMetric(float64(size)/(snapBenchTopics*snapBenchPartitions), "bytes/partition")
}

// liveHeap is the heap's live bytes after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// snapBenchImage is a million partitions placed round-robin over the
// brokers, each replica in its broker's one log directory.
func snapBenchImage(b *testing.B) *metadata.Image {
	b.Helper()
	im := metadata.NewImage()
	apply := func(r metadata.Record) {
		if err := im.Apply(r); err != nil {
			b.Fatal(err)
		}
	}
	apply(&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27})
	dirs := make([]metadata.Uuid, snapBenchBrokers)
	for id := range int32(snapBenchBrokers) {
		dirs[id] = metadata.Uuid{byte(id >> 8), byte(id), 0x5a, 2, 7, 1, byte(id * 7), 9, 3, byte(id * 13), 4, 4, 8, byte(id), 1, 2}
		apply(&metadata.RegisterBrokerRecord{Version: 3, BrokerId: id, BrokerEpoch: int64(100 + id), IncarnationId: metadata.Uuid{byte(id), 1},
			EndPoints: []metadata.RegisterBrokerRecordBrokerEndpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(20000 + id)}},
			LogDirs:   []metadata.Uuid{dirs[id]}})
	}
	for t := range snapBenchTopics {
		id := metadata.Uuid{byte(t >> 16), byte(t >> 8), byte(t), 0x70, 1, byte(t * 31), byte(t * 17), 0x4e, 0x81, byte(t >> 3), byte(t * 5), 2, 0xc1, byte(t * 11), 6, byte(t)}
		apply(&metadata.TopicRecord{Name: "scale-topic-" + strconv.Itoa(t), TopicId: id})
		for p := range snapBenchPartitions {
			first := (t*snapBenchPartitions + p) % snapBenchBrokers
			replicas := []int32{int32(first), int32((first + 1) % snapBenchBrokers), int32((first + 2) % snapBenchBrokers)}
			apply(&metadata.PartitionRecord{Version: 2, PartitionId: int32(p), TopicId: id, Replicas: replicas, Isr: replicas,
				Leader: replicas[0], LeaderEpoch: 1, PartitionEpoch: 1,
				Directories: []metadata.Uuid{dirs[replicas[0]], dirs[replicas[1]], dirs[replicas[2]]}})
		}
	}
	return im
}
