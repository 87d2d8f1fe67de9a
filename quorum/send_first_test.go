package quorum_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/quorum/memlog"
)

// A leader ships new records to a waiting follower in the same Ready that
// asks for them to be written (SendFirst), so the two fsyncs overlap; its
// own copy counts toward the high watermark only after Advance.
func TestLeaderShipsRecordsBeforeItsOwnSync(t *testing.T) {
	log := &memlog.Log{}
	n, err := quorum.New(quorum.Config{
		NodeID: 1, ClusterID: "c", Voters: map[int32][]quorum.Endpoint{1: nil, 2: nil, 3: nil},
		Rand: rand.New(rand.NewPCG(5, 6)), HardState: quorum.HardState{LeaderID: -1, VotedID: -1}, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	electNodeOne(t, n, log)
	applyReady(t, n, log)
	epoch, end := n.Status().Epoch, log.EndOffset()

	// Follower 2 has everything and waits for more.
	fetch := func(reqID uint64, offset int64) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaState.ID, req.MaxWaitMillis, req.MaxBytes = 17, 2, 500, 1<<20
		p := kmsg.NewFetchRequestTopicPartition()
		p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = epoch, offset, epoch
		topic := kmsg.NewFetchRequestTopic()
		topic.TopicID, topic.Partitions = quorum.MetadataTopicID, []kmsg.FetchRequestTopicPartition{p}
		req.Topics = []kmsg.FetchRequestTopic{topic}
		if err := n.Step(quorum.Message{From: 2, To: 1, ReqID: reqID, Request: req}); err != nil {
			t.Fatal(err)
		}
	}
	fetch(1, end)
	if msgs := applyReady(t, n, log); len(msgs) != 0 {
		t.Fatalf("a fetch at the log end was answered at once: %v", msgs)
	}

	if _, _, err := n.Propose([][]byte{[]byte("r1")}); err != nil {
		t.Fatal(err)
	}
	hwBefore := n.Status().HighWatermark
	rd := n.Ready()
	if !rd.SendFirst || len(rd.Append) == 0 {
		t.Fatalf("Ready: SendFirst %v with %d bytes to append; want true with the proposal", rd.SendFirst, len(rd.Append))
	}
	var shipped []byte
	for _, m := range rd.Messages {
		if resp, ok := m.Response.(*kmsg.FetchResponse); ok && m.ReqID == 1 {
			shipped = resp.Topics[0].Partitions[0].RecordBatches
		}
	}
	if !bytes.Equal(shipped, rd.Append) {
		t.Fatalf("the parked fetch got %d bytes; want the %d bytes being appended", len(shipped), len(rd.Append))
	}
	if rd.HighWatermark != hwBefore {
		t.Fatalf("high watermark moved to %d before anything was durable (was %d)", rd.HighWatermark, hwBefore)
	}
	if err := log.Append(rd.Append); err != nil {
		t.Fatal(err)
	}
	log.Sync()
	n.Advance()

	// Leader and follower 2 hold it durably: a majority of three.
	fetch(2, log.EndOffset())
	applyReady(t, n, log)
	if hw := n.Status().HighWatermark; hw != log.EndOffset() {
		t.Fatalf("high watermark %d after a majority synced; want %d", hw, log.EndOffset())
	}
}

// With the leader's fsync deferred (AdvanceWritten), its copy does not count
// until LeaderSynced: one follower's acknowledgement is not a majority of
// three, two are; a report for another epoch is ignored.
func TestDeferredLeaderSyncCountsOnlyWhenReported(t *testing.T) {
	log := &memlog.Log{}
	n, err := quorum.New(quorum.Config{
		NodeID: 1, ClusterID: "c", Voters: map[int32][]quorum.Endpoint{1: nil, 2: nil, 3: nil},
		Rand: rand.New(rand.NewPCG(7, 8)), HardState: quorum.HardState{LeaderID: -1, VotedID: -1}, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	electNodeOne(t, n, log)
	applyReady(t, n, log)
	epoch := n.Status().Epoch
	fetch := func(from int32, offset int64) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaState.ID, req.MaxBytes = 17, from, 1<<20
		p := kmsg.NewFetchRequestTopicPartition()
		p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = epoch, offset, epoch
		topic := kmsg.NewFetchRequestTopic()
		topic.TopicID, topic.Partitions = quorum.MetadataTopicID, []kmsg.FetchRequestTopicPartition{p}
		req.Topics = []kmsg.FetchRequestTopic{topic}
		if err := n.Step(quorum.Message{From: from, To: 1, ReqID: uint64(from), Request: req}); err != nil {
			t.Fatal(err)
		}
		applyReady(t, n, log)
	}
	// Commit the epoch's start so the high watermark is known.
	fetch(2, log.EndOffset())
	committed := n.Status().HighWatermark

	if _, _, err := n.Propose([][]byte{[]byte("r1")}); err != nil {
		t.Fatal(err)
	}
	rd := n.Ready()
	if !rd.SendFirst || !rd.MustSync {
		t.Fatalf("Ready: SendFirst %v MustSync %v; want both", rd.SendFirst, rd.MustSync)
	}
	if err := log.Append(rd.Append); err != nil { // written, not synced
		t.Fatal(err)
	}
	n.AdvanceWritten()
	end := log.EndOffset()

	fetch(2, end)
	if hw := n.Status().HighWatermark; hw != committed {
		t.Fatalf("high watermark %d with only follower 2 durable; want %d", hw, committed)
	}
	n.LeaderSynced(epoch-1, end)
	if hw := n.Status().HighWatermark; hw != committed {
		t.Fatalf("high watermark %d after a report for epoch %d; want %d", hw, epoch-1, committed)
	}
	log.Sync()
	n.LeaderSynced(epoch, end)
	applyReady(t, n, log)
	if hw := n.Status().HighWatermark; hw != end {
		t.Fatalf("high watermark %d once the leader synced; want %d", hw, end)
	}
}
