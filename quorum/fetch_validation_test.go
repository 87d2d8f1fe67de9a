package quorum_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/quorum"
)

// epochStart is one leader-epoch cache entry.
type epochStart struct {
	epoch int32
	start int64
}

// shapedLog is a Log of a given shape (start, end, epoch cache, snapshots)
// whose contents the test does not need: it answers the position questions
// the leader asks when it validates a Fetch, the way Apache's UnifiedLog
// and LeaderEpochFileCache would, and nothing more. Appends do not change
// it, so the leader's own start-of-epoch batch leaves the shape alone.
type shapedLog struct {
	start, end int64
	epochs     []epochStart
	// snapshots are oldest first and may begin with the bootstrap 0-0,
	// which LatestSnapshot returns too, to check the core never serves it.
	snapshots []quorum.SnapshotID
}

func (l *shapedLog) StartOffset() int64 { return l.start }
func (l *shapedLog) EndOffset() int64   { return l.end }
func (l *shapedLog) LastEpoch() int32 {
	if len(l.epochs) > 0 {
		return l.epochs[len(l.epochs)-1].epoch
	}
	if n := len(l.snapshots); n > 0 {
		return l.snapshots[n-1].Epoch
	}
	return 0
}

// EndOffsetForEpoch is LeaderEpochFileCache.endOffsetFor alone: (-1, -1)
// when the cache cannot answer.
func (l *shapedLog) EndOffsetForEpoch(epoch int32) (int64, int32) {
	if len(l.epochs) == 0 {
		return -1, -1
	}
	if l.epochs[len(l.epochs)-1].epoch == epoch {
		return l.end, epoch
	}
	floor := int32(-1)
	for _, e := range l.epochs {
		if e.epoch > epoch {
			if floor < 0 {
				return e.start, epoch
			}
			return e.start, floor
		}
		floor = e.epoch
	}
	return -1, -1
}

func (l *shapedLog) Read(int64, int) ([]byte, error) { return nil, nil }
func (l *shapedLog) LatestSnapshot() (quorum.SnapshotID, bool) {
	if len(l.snapshots) == 0 {
		return quorum.SnapshotID{}, false
	}
	return l.snapshots[len(l.snapshots)-1], true
}
func (l *shapedLog) EarliestSnapshot() (quorum.SnapshotID, bool) {
	if len(l.snapshots) == 0 {
		return quorum.SnapshotID{}, false
	}
	return l.snapshots[0], true
}

// ReadSnapshot serves each snapshot as one of no records and no voter set.
func (l *shapedLog) ReadSnapshot(id quorum.SnapshotID, pos int64, maxBytes int) ([]byte, int64, error) {
	data := metadata.EncodeSnapshotFile(metadata.SnapshotFile{Epoch: id.Epoch}, 0)
	if pos < 0 || pos > int64(len(data)) {
		return nil, 0, errors.New("shapedLog: position out of range")
	}
	return data[pos:min(int64(len(data)), pos+int64(maxBytes))], int64(len(data)), nil
}

// TestLeaderValidatesFetchPositionLikeKafkaMetadataLog checks how a leader
// answers a fetcher's (offset, epoch) against Apache's
// ReplicatedLog.validateOffsetAndEpoch and KafkaMetadataLog.endOffsetForEpoch
// (4.1.0 and trunk agree). Each case is one an earlier core got wrong.
func TestLeaderValidatesFetchPositionLikeKafkaMetadataLog(t *testing.T) {
	cases := []struct {
		name          string
		log           shapedLog
		offset        int64
		epoch         int32
		wantDiverging quorum.SnapshotID // epoch -1: none
		wantSnapshot  quorum.SnapshotID // epoch -1: none
	}{{
		// The cache has no epoch at or above the one asked for: Apache
		// answers (LEO, last epoch), never (-1, -1), which a fetcher would
		// read as "no divergence" and stall on.
		name:   "epoch above every cached epoch",
		log:    shapedLog{start: 0, end: 60, epochs: []epochStart{{2, 0}, {5, 40}}},
		offset: 70, epoch: 6,
		wantDiverging: quorum.SnapshotID{EndOffset: 60, Epoch: 5},
		wantSnapshot:  quorum.SnapshotID{EndOffset: -1, Epoch: -1},
	}, {
		// Snapshots are kept while the log still starts at 0: a fetcher
		// whose epoch is older than the earliest snapshot's is sent to the
		// latest snapshot, even though the log could serve it.
		name:   "epoch older than the earliest snapshot",
		log:    shapedLog{start: 0, end: 250, epochs: []epochStart{{1, 0}, {3, 50}, {5, 150}}, snapshots: []quorum.SnapshotID{{EndOffset: 100, Epoch: 3}, {EndOffset: 200, Epoch: 5}}},
		offset: 80, epoch: 2,
		wantDiverging: quorum.SnapshotID{EndOffset: -1, Epoch: -1},
		wantSnapshot:  quorum.SnapshotID{EndOffset: 200, Epoch: 5},
	}, {
		// An epoch below every epoch the log holds ends at the log start,
		// and the earliest snapshot (the one at the log start, not the
		// latest) supplies the epoch of the answer.
		name:   "epoch older than the log answers with the earliest snapshot",
		log:    shapedLog{start: 100, end: 250, epochs: []epochStart{{5, 100}}, snapshots: []quorum.SnapshotID{{EndOffset: 100, Epoch: 3}, {EndOffset: 200, Epoch: 5}}},
		offset: 120, epoch: 4,
		wantDiverging: quorum.SnapshotID{EndOffset: 100, Epoch: 3},
		wantSnapshot:  quorum.SnapshotID{EndOffset: -1, Epoch: -1},
	}, {
		// The bootstrap snapshot 0-0 is local formatting, never served.
		name:   "bootstrap snapshot is not served to an empty fetcher",
		log:    shapedLog{start: 0, end: 30, epochs: []epochStart{{1, 0}}, snapshots: []quorum.SnapshotID{{}}},
		offset: 0, epoch: 0,
		wantDiverging: quorum.SnapshotID{EndOffset: -1, Epoch: -1},
		wantSnapshot:  quorum.SnapshotID{EndOffset: -1, Epoch: -1},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			leader, epoch := singleVoterLeader(t, &c.log)
			p := fetchFromObserver(t, leader, epoch, c.offset, c.epoch)
			gotDiv := quorum.SnapshotID{EndOffset: p.DivergingEpoch.EndOffset, Epoch: p.DivergingEpoch.Epoch}
			gotSnap := quorum.SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}
			if p.ErrorCode != 0 || gotDiv != c.wantDiverging || gotSnap != c.wantSnapshot {
				t.Errorf("fetch (offset %d, epoch %d): error %d, diverging %+v, snapshot %+v; want diverging %+v, snapshot %+v",
					c.offset, c.epoch, p.ErrorCode, gotDiv, gotSnap, c.wantDiverging, c.wantSnapshot)
			}
		})
	}
}

// singleVoterLeader makes node 1, the only voter, elect itself over log.
func singleVoterLeader(t *testing.T, log quorum.Log) (*quorum.Node, int32) {
	t.Helper()
	n, err := quorum.New(quorum.Config{
		NodeID: 1, DirectoryID: [16]byte{1}, ClusterID: "c", Voters: map[int32][]quorum.Endpoint{1: {{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093}}},
		Rand: rand.New(rand.NewPCG(1, 2)), HardState: quorum.HardState{LeaderID: -1, VotedID: -1}, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	for now := int64(0); now <= 5000 && n.Status().Role != quorum.RoleLeader; now += 100 {
		n.Tick(now)
		drain(n)
	}
	if n.Status().Role != quorum.RoleLeader {
		t.Fatalf("node 1 did not elect itself: %+v", n.Status())
	}
	return n, n.Status().Epoch
}

func drain(n *quorum.Node) []quorum.Message {
	var out []quorum.Message
	for n.HasReady() {
		rd := n.Ready()
		out = append(out, rd.Messages...)
		n.Advance()
	}
	return out
}

// fetchFromObserver sends a Fetch v18 from observer 9 that must be answered
// at once (MaxWaitMs 0) and returns the answer's partition.
func fetchFromObserver(t *testing.T, n *quorum.Node, leaderEpoch int32, offset int64, epoch int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 18
	req.ReplicaState.ID = 9
	req.MaxBytes = 1 << 20
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch, p.HighWatermark = leaderEpoch, offset, epoch, -1
	topic := kmsg.NewFetchRequestTopic()
	topic.Topic, topic.TopicID = quorum.MetadataTopic, quorum.MetadataTopicID
	topic.Partitions = []kmsg.FetchRequestTopicPartition{p}
	req.Topics = []kmsg.FetchRequestTopic{topic}
	if err := n.Step(quorum.Message{From: 9, To: 1, ReqID: 77, Request: req}); err != nil {
		t.Fatal(err)
	}
	for _, m := range drain(n) {
		if resp, ok := m.Response.(*kmsg.FetchResponse); ok && m.ReqID == 77 {
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("fetch response with %d topics", len(resp.Topics))
			}
			return resp.Topics[0].Partitions[0]
		}
	}
	t.Fatal("no answer to the fetch")
	return kmsg.FetchResponseTopicPartition{}
}
