package quorum_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/quorum/memlog"
)

// threeVoterLeader elects node 1 of voters 1-3 over an empty log and
// persists its start-of-epoch batch.
func threeVoterLeader(t *testing.T, seed uint64) (*quorum.Node, *memlog.Log, int32) {
	t.Helper()
	log := &memlog.Log{}
	n, err := quorum.New(quorum.Config{
		NodeID: 1, ClusterID: "c", Voters: map[int32][]quorum.Endpoint{1: nil, 2: nil, 3: nil},
		Rand: rand.New(rand.NewPCG(seed, seed+1)), HardState: quorum.HardState{LeaderID: -1, VotedID: -1}, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	electNodeOne(t, n, log)
	applyReady(t, n, log)
	return n, log, n.Status().Epoch
}

// stepFetch steps a Fetch v17 from follower at offset, with reqID = from.
func stepFetch(t *testing.T, n *quorum.Node, epoch, from int32, offset int64, maxWaitMs int32) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaState.ID, req.MaxWaitMillis, req.MaxBytes = 17, from, maxWaitMs, 1<<20
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = epoch, offset, epoch
	topic := kmsg.NewFetchRequestTopic()
	topic.TopicID, topic.Partitions = quorum.MetadataTopicID, []kmsg.FetchRequestTopicPartition{p}
	req.Topics = []kmsg.FetchRequestTopic{topic}
	if err := n.Step(quorum.Message{From: from, To: 1, ReqID: uint64(from), Request: req}); err != nil {
		t.Fatal(err)
	}
}

// A leader ships new records to a waiting follower in the same Ready that
// asks for them to be written (SendFirst), so the two fsyncs overlap; its
// own copy counts toward the high watermark only after Advance.
func TestLeaderShipsRecordsBeforeItsOwnSync(t *testing.T) {
	n, log, epoch := threeVoterLeader(t, 5)

	// Follower 2 has everything and waits for more.
	stepFetch(t, n, epoch, 2, log.EndOffset(), 500)
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
		if resp, ok := m.Response.(*kmsg.FetchResponse); ok && m.ReqID == 2 {
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
	stepFetch(t, n, epoch, 2, log.EndOffset(), 500)
	applyReady(t, n, log)
	if hw := n.Status().HighWatermark; hw != log.EndOffset() {
		t.Fatalf("high watermark %d after a majority synced; want %d", hw, log.EndOffset())
	}
}

// With the leader's fsync deferred (AdvanceWritten), its copy does not count
// until LeaderSynced: one follower's acknowledgement is not a majority of
// three; a report for another epoch is ignored.
func TestDeferredLeaderSyncCountsOnlyWhenReported(t *testing.T) {
	n, log, epoch := threeVoterLeader(t, 7)
	// Commit the epoch's start so the high watermark is known.
	stepFetch(t, n, epoch, 2, log.EndOffset(), 0)
	applyReady(t, n, log)
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

	stepFetch(t, n, epoch, 2, end, 0)
	applyReady(t, n, log)
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
