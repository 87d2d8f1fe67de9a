package quorum_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/node/nodetest"
	"github.com/kraftd/kraftd/quorum"
)

// threeVoterLeader elects node 1 of voters 1-3, the production runtime over
// MemFS, with its deferred fsyncs held until the test releases them, and
// makes its start-of-epoch batch durable.
func threeVoterLeader(t *testing.T, seed uint64) (*nodetest.Node, int32) {
	t.Helper()
	h := newVoterOne(t, nodetest.Config{HoldSyncs: true, Rand: func() *rand.Rand { return rand.New(rand.NewPCG(seed, seed+1)) }})
	electNodeOne(t, h)
	for h.ReleaseSync() {
		process(t, h)
	}
	return h, h.Status().Epoch
}

// newVoterOne starts node 1 of voters 1-3 with cfg.
func newVoterOne(t *testing.T, cfg nodetest.Config) *nodetest.Node {
	t.Helper()
	cfg.ID, cfg.Voters = 1, map[int32][]quorum.Endpoint{1: nil, 2: nil, 3: nil}
	h, err := nodetest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func process(t *testing.T, h *nodetest.Node) {
	t.Helper()
	if err := h.Process(); err != nil {
		t.Fatal(err)
	}
}

// electNodeOne ticks node 1 until it leads, with node 2 granting its
// pre-vote and vote; everything else node 1 sends is lost.
func electNodeOne(t *testing.T, h *nodetest.Node) {
	t.Helper()
	for step := 0; h.Status().Role != quorum.RoleLeader; step++ {
		if step > 100 {
			t.Fatalf("node 1 not elected: %+v", h.Status())
		}
		h.Advance(100)
		process(t, h)
		for _, m := range h.Messages() {
			if req, ok := m.Request.(*kmsg.VoteRequest); ok && m.To == 2 {
				resp := kmsg.NewPtrVoteResponse()
				resp.Version = req.Version
				p := kmsg.NewVoteResponseTopicPartition()
				p.LeaderID, p.LeaderEpoch, p.VoteGranted = -1, req.Topics[0].Partitions[0].CandidateEpoch, true
				resp.Topics = []kmsg.VoteResponseTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.VoteResponseTopicPartition{p}}}
				h.Deliver(quorum.Message{From: 2, To: 1, ReqID: m.ReqID, Response: resp})
				process(t, h)
			}
		}
	}
}

// stepFetch delivers a Fetch v17 from follower at offset and runs the loop.
func stepFetch(t *testing.T, h *nodetest.Node, epoch, from int32, offset int64, maxWaitMs int32) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaState.ID, req.MaxWaitMillis, req.MaxBytes = 17, from, maxWaitMs, 1<<20
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = epoch, offset, epoch
	topic := kmsg.NewFetchRequestTopic()
	topic.TopicID, topic.Partitions = quorum.MetadataTopicID, []kmsg.FetchRequestTopicPartition{p}
	req.Topics = []kmsg.FetchRequestTopic{topic}
	h.Deliver(quorum.Message{From: from, To: 1, ReqID: uint64(from), Request: req})
	process(t, h)
}

// fetchAnswers returns the records of each FetchResponse node 1 sent to
// follower since the last call; other messages are dropped.
func fetchAnswers(h *nodetest.Node, follower int32) [][]byte {
	var out [][]byte
	for _, m := range h.Messages() {
		if resp, ok := m.Response.(*kmsg.FetchResponse); ok && m.To == follower {
			out = append(out, resp.Topics[0].Partitions[0].RecordBatches)
		}
	}
	return out
}

// appended is every batch the loop wrote since the last look at events,
// and whether a FetchResponse to follower left before the first of them.
func appended(h *nodetest.Node, follower int32) (written []byte, shippedFirst bool) {
	for _, ev := range h.Events() {
		switch ev.Kind {
		case nodetest.Appended:
			written = append(written, ev.Batches...)
		case nodetest.Sent:
			if _, ok := ev.Message.Response.(*kmsg.FetchResponse); ok && ev.Message.To == follower && written == nil {
				shippedFirst = true
			}
		}
	}
	return written, shippedFirst
}

func proposeOne(h *nodetest.Node, value string) {
	h.Runtime().Propose(&node.Proposal{
		Records: []metadata.Record{&metadata.ConfigRecord{ResourceType: 4, Name: value, Value: &value}},
		Done:    func(int64, error) {},
	})
}

// A leader ships new records to a waiting follower from the Ready that asks
// for them to be written (Ready.SendFirst: before it writes them), and its
// own fsync of them runs beside the loop (the Syncer), so the two fsyncs
// overlap; its own copy counts toward the high watermark only once that
// fsync is reported.
func TestLeaderShipsRecordsBeforeItsOwnSync(t *testing.T) {
	h, epoch := threeVoterLeader(t, 5)

	// Follower 2 has everything and waits for more.
	h.Messages()
	stepFetch(t, h, epoch, 2, h.Disk().Log.EndOffset(), 500)
	if got := fetchAnswers(h, 2); len(got) != 0 {
		t.Fatalf("a fetch at the log end was answered at once: %d answers", len(got))
	}

	hwBefore := h.Status().HighWatermark
	h.Events()
	proposeOne(h, "r1")
	process(t, h)
	if _, held := h.HeldSync(); !held {
		t.Fatal("the leader's fsync of the proposal was not deferred to the Syncer")
	}
	written, shippedFirst := appended(h, 2)
	shipped := fetchAnswers(h, 2)
	if len(written) == 0 || len(shipped) != 1 || !bytes.Equal(shipped[0], written) {
		t.Fatalf("with the leader's fsync out, the parked fetch got %d answers; want one carrying the %d bytes written", len(shipped), len(written))
	}
	if !shippedFirst {
		t.Fatal("the records left for follower 2 only after the leader wrote them; want them shipped from the Ready that asks for the write")
	}
	if hw := h.Status().HighWatermark; hw != hwBefore {
		t.Fatalf("high watermark moved to %d before the leader's copy was durable (was %d)", hw, hwBefore)
	}

	// The leader's fsync returns and follower 2 holds the records: a
	// majority of three has them durably.
	h.ReleaseSync()
	process(t, h)
	end := h.Disk().Log.EndOffset()
	stepFetch(t, h, epoch, 2, end, 500)
	if hw := h.Status().HighWatermark; hw != end {
		t.Fatalf("high watermark %d after a majority synced; want %d", hw, end)
	}
}

// While the leader's fsync is out, its copy does not count: one follower's
// acknowledgement is not a majority of three, and a report for another
// epoch changes nothing; the report of the fsync itself commits.
func TestDeferredLeaderSyncCountsOnlyWhenReported(t *testing.T) {
	h, epoch := threeVoterLeader(t, 7)
	// Commit the epoch's start so the high watermark is known.
	stepFetch(t, h, epoch, 2, h.Disk().Log.EndOffset(), 0)
	committed := h.Status().HighWatermark
	if committed < 0 {
		t.Fatal("the start of the epoch did not commit")
	}

	proposeOne(h, "r1")
	process(t, h)
	job, held := h.HeldSync()
	if !held {
		t.Fatal("the leader's fsync of the proposal was not deferred to the Syncer")
	}
	end := h.Disk().Log.EndOffset()

	stepFetch(t, h, epoch, 2, end, 0)
	if hw := h.Status().HighWatermark; hw != committed {
		t.Fatalf("high watermark %d with only follower 2 durable; want %d", hw, committed)
	}
	h.Runtime().Synced(node.SyncJob{Epoch: epoch - 1, End: end}, nil)
	process(t, h)
	if hw := h.Status().HighWatermark; hw != committed {
		t.Fatalf("high watermark %d after a report for epoch %d; want %d", hw, epoch-1, committed)
	}
	if job.Epoch != epoch || job.End != end {
		t.Fatalf("the held fsync is %+v; want epoch %d up to %d", job, epoch, end)
	}
	h.ReleaseSync()
	process(t, h)
	if hw := h.Status().HighWatermark; hw != end {
		t.Fatalf("high watermark %d once the leader synced; want %d", hw, end)
	}
}
