package metrics

import (
	"io"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/peer"
	"github.com/kraftd/kraftd/quorum"
)

// The image the scrape benchmark counts: the shape of the metadata
// package's BenchmarkMillionPartitions (Apache's
// TopicsImageZonalOutageBenchmark at its largest), a million partitions.
const (
	scrapeBenchTopics     = 100_000
	scrapeBenchPartitions = 10
	scrapeBenchBrokers    = 100
	scrapeBenchScrapes    = 5
)

// imageSource is a Source whose image is a real controller's, fed by
// Replay, and whose quorum is a fixed three-voter leader: the scrape's cost
// is the image's count, not the quorum's state.
type imageSource struct{ ctl *controller.Controller }

func (s imageSource) NodeID() int32 { return 1 }
func (s imageSource) Status() quorum.Status {
	return quorum.Status{SoftState: quorum.SoftState{Role: quorum.RoleLeader, LeaderID: 1, Epoch: 3, VotedID: 1, IsVoter: true, EpochCommitted: true},
		Voters: quorum.VoterSet{{ID: 1}, {ID: 2}, {ID: 3}}, HighWatermark: s.ctl.Applied() + 1, EndOffset: s.ctl.Applied() + 1, LeaderContactMs: -1}
}
func (s imageSource) Applied() int64                   { return s.ctl.Applied() }
func (s imageSource) Cluster() controller.ClusterStats { return s.ctl.Stats() }
func (s imageSource) HeartbeatAges() map[int32]time.Duration {
	ages := map[int32]time.Duration{}
	for id := range int32(scrapeBenchBrokers) {
		ages[id] = time.Duration(id) * time.Millisecond
	}
	return ages
}
func (s imageSource) UnresolvedPeers() map[int32]string             { return nil }
func (s imageSource) PeerClusterMismatches() []peer.ClusterMismatch { return nil }
func (s imageSource) TimedOutHeartbeats() int64                     { return 0 }
func (s imageSource) PeerTraffic() map[int32]peer.Traffic {
	return map[int32]peer.Traffic{2: {Requests: 10, Responses: 10}, 3: {Requests: 10, Responses: 10}}
}

// replayMillionPartitions replays a million partitions of RF 3 over 100
// brokers into a controller, record by record, as the node loop would.
func replayMillionPartitions(b *testing.B) *controller.Controller {
	b.Helper()
	ctl := controller.New(1, nil)
	off := int64(0)
	replay := func(r metadata.Record) {
		if err := ctl.Replay(off, r); err != nil {
			b.Fatal(err)
		}
		off++
	}
	replay(&metadata.FeatureLevelRecord{Name: controller.MetadataVersionFeature, FeatureLevel: 27})
	for id := range int32(scrapeBenchBrokers) {
		replay(&metadata.RegisterBrokerRecord{Version: 3, BrokerId: id, BrokerEpoch: int64(100 + id), IncarnationId: metadata.Uuid{byte(id), 1},
			EndPoints: []metadata.RegisterBrokerRecordBrokerEndpoint{{Name: "PLAINTEXT", Host: "broker-" + strconv.Itoa(int(id)), Port: 9092}},
			LogDirs:   []metadata.Uuid{{byte(id), 2}}})
	}
	for t := range scrapeBenchTopics {
		id := metadata.Uuid{byte(t >> 16), byte(t >> 8), byte(t), 0x70, 1}
		replay(&metadata.TopicRecord{Name: "topic-" + strconv.Itoa(t), TopicId: id})
		for p := range scrapeBenchPartitions {
			first := (t*scrapeBenchPartitions + p) % scrapeBenchBrokers
			replicas := []int32{int32(first), int32((first + 1) % scrapeBenchBrokers), int32((first + 2) % scrapeBenchBrokers)}
			replay(&metadata.PartitionRecord{Version: 2, PartitionId: int32(p), TopicId: id, Replicas: replicas, Isr: replicas,
				Leader: replicas[0], LeaderEpoch: 1, PartitionEpoch: 1})
		}
	}
	return ctl
}

// BenchmarkScrapeMillionPartitions serves /metrics on a loopback port over
// a controller holding a million partitions and times whole scrapes over
// HTTP (the count of the image under its read lock, the collectors, the
// encoding), reporting ms and bytes and allocations of the process per
// scrape, and the size of the answer.
func BenchmarkScrapeMillionPartitions(b *testing.B) {
	ctl := replayMillionPartitions(b)
	m := New()
	l, err := m.Serve("127.0.0.1:0", imageSource{ctl}, ServeOptions{Bounds: ReadyBounds{MaxContactAgeMs: 1000, MaxLagRecords: 10000}}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	url := "http://" + l.Addr().String() + "/metrics"
	scrape := func() int {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("scrape: %v %s", err, resp.Status)
		}
		return len(body)
	}
	scrape() // the first connection and the collectors' set-up
	b.ResetTimer()
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start, startCPU := time.Now(), processCPU(b)
		size := 0
		for range scrapeBenchScrapes {
			size = scrape()
		}
		elapsed, cpu := time.Since(start), processCPU(b)-startCPU
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(elapsed.Microseconds())/1000/scrapeBenchScrapes, "ms/scrape")
		b.ReportMetric(float64(cpu.Microseconds())/1000/scrapeBenchScrapes, "cpu_ms/scrape")
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/scrapeBenchScrapes, "allocs/scrape")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/scrapeBenchScrapes, "B/scrape")
		b.ReportMetric(float64(size), "answer_bytes")
		s := ctl.Stats()
		b.Logf("%d partitions, %d topics, %d brokers: %d scrapes, %.1f ms each (%.1f ms of process CPU), %.0f allocations and %.0f KiB each (the whole process), %d bytes answered",
			s.Partitions, s.Topics, s.ActiveBrokers, scrapeBenchScrapes, float64(elapsed.Microseconds())/1000/scrapeBenchScrapes,
			float64(cpu.Microseconds())/1000/scrapeBenchScrapes,
			float64(after.Mallocs-before.Mallocs)/scrapeBenchScrapes, float64(after.TotalAlloc-before.TotalAlloc)/1024/scrapeBenchScrapes, size)
	}
}
