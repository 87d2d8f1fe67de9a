package quorum_test

import (
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/quorum/memlog"
	"github.com/kraftd/kraftd/storage/batch"
)

// A new leader writes no idle record before its epoch's first commit, and
// says when that commit happened (SoftState.EpochCommitted). Found
// in a mixed quorum: a kraftd leader elected over a log holding only an
// Apache leader's LeaderChange wrote NoOps while its followers were slow to
// fetch; its controller writes the bootstrap feature levels only once it
// sees the high watermark, so the NoOps came first, and the Apache 4.4
// follower's metadata loader stopped the JVM ("Unknown metadata version
// for FeaturesImage") when it committed them.
func TestNoIdleRecordBeforeFirstCommit(t *testing.T) {
	log := &memlog.Log{}
	idle := []byte("idle")
	n, err := quorum.New(quorum.Config{
		NodeID: 1, ClusterID: "c", Voters: map[int32][]quorum.Endpoint{1: nil, 2: nil, 3: nil},
		Rand: rand.New(rand.NewPCG(3, 4)), HardState: quorum.HardState{LeaderID: -1, VotedID: -1}, Log: log,
		IdleRecord: func() []byte { return idle },
	})
	if err != nil {
		t.Fatal(err)
	}
	now := electNodeOne(t, n, log)
	applyReady(t, n, log)
	epoch, afterLeaderChange := n.Status().Epoch, log.EndOffset()

	// Twice the idle interval without a follower fetch: nothing committed,
	// so nothing but the LeaderChange batch may be in the log.
	for end := now + 1000; now < end; now += 50 {
		n.Tick(now)
		applyReady(t, n, log)
	}
	if got := log.EndOffset(); got != afterLeaderChange {
		t.Fatalf("leader wrote up to offset %d before its first commit; want only the LeaderChange batch (end %d)", got, afterLeaderChange)
	}
	if n.Status().EpochCommitted {
		t.Fatal("EpochCommitted before any record of the epoch committed")
	}

	// Node 2 fetches past the LeaderChange: the epoch's first commit. From
	// then on idle records are due.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaState.ID, fetch.MaxWaitMillis = 18, 2, 0
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.CurrentLeaderEpoch, fp.FetchOffset, fp.LastFetchedEpoch, fp.HighWatermark = epoch, afterLeaderChange, epoch, -1
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: quorum.MetadataTopic, TopicID: quorum.MetadataTopicID, Partitions: []kmsg.FetchRequestTopicPartition{fp}}}
	if err := n.Step(quorum.Message{From: 2, To: 1, ReqID: 1, Request: fetch}); err != nil {
		t.Fatal(err)
	}
	applyReady(t, n, log)
	if hw := n.Status().HighWatermark; hw != afterLeaderChange || !n.Status().EpochCommitted {
		t.Fatalf("high watermark %d (epoch committed: %v) after node 2 fetched at %d", hw, n.Status().EpochCommitted, afterLeaderChange)
	}
	for end := now + 1000; now < end; now += 50 {
		n.Tick(now)
		applyReady(t, n, log)
	}
	if log.EndOffset() == afterLeaderChange {
		t.Fatal("no idle record once the epoch had committed")
	}
	raw, _ := log.Read(afterLeaderChange, 1<<20)
	b, err := batch.Decode(raw)
	if err != nil || b.IsControl() || string(b.Records[0].Value) != "idle" {
		t.Fatalf("record after the LeaderChange: %+v, %v; want the idle record", b, err)
	}
}

// electNodeOne ticks node 1 of three voters until it leads, with node 2
// granting its pre-vote and vote, and returns the clock.
func electNodeOne(t *testing.T, n *quorum.Node, log *memlog.Log) int64 {
	t.Helper()
	now := int64(0)
	// Elect node 1: node 2 grants the pre-vote and then the vote.
	for step := 0; n.Status().Role != quorum.RoleLeader; step++ {
		if step > 100 {
			t.Fatalf("node 1 not elected: %+v", n.Status())
		}
		now += 100
		n.Tick(now)
		for _, m := range applyReady(t, n, log) {
			if req, ok := m.Request.(*kmsg.VoteRequest); ok && m.To == 2 {
				resp := kmsg.NewPtrVoteResponse()
				resp.Version = req.Version
				p := kmsg.NewVoteResponseTopicPartition()
				p.LeaderID, p.LeaderEpoch, p.VoteGranted = -1, req.Topics[0].Partitions[0].CandidateEpoch, true
				resp.Topics = []kmsg.VoteResponseTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.VoteResponseTopicPartition{p}}}
				if err := n.Step(quorum.Message{From: 2, To: 1, ReqID: m.ReqID, Response: resp}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return now
}

// applyReady persists every pending Ready into log and returns the messages.
func applyReady(t *testing.T, n *quorum.Node, log *memlog.Log) []quorum.Message {
	t.Helper()
	var out []quorum.Message
	for n.HasReady() {
		rd := n.Ready()
		if rd.Truncate != nil {
			log.TruncateTo(*rd.Truncate)
		}
		if len(rd.Append) > 0 {
			if err := log.Append(rd.Append); err != nil {
				t.Fatal(err)
			}
		}
		log.Sync()
		out = append(out, rd.Messages...)
		n.Advance()
	}
	return out
}
