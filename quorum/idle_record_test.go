package quorum_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node/nodetest"
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
	h := newVoterOne(t, nodetest.Config{IdleIntervalMs: 500, Rand: func() *rand.Rand { return rand.New(rand.NewPCG(3, 4)) }})
	electNodeOne(t, h)
	log := h.Disk().Log
	epoch, afterLeaderChange := h.Status().Epoch, log.EndOffset()

	// Twice the idle interval without a follower fetch: nothing committed,
	// so nothing but the LeaderChange batch may be in the log.
	for range 20 {
		h.Advance(50)
		process(t, h)
	}
	if got := log.EndOffset(); got != afterLeaderChange {
		t.Fatalf("leader wrote up to offset %d before its first commit; want only the LeaderChange batch (end %d)", got, afterLeaderChange)
	}
	if h.Status().EpochCommitted {
		t.Fatal("EpochCommitted before any record of the epoch committed")
	}

	// Node 2 fetches past the LeaderChange: the epoch's first commit. From
	// then on idle records are due.
	stepFetch(t, h, epoch, 2, afterLeaderChange, 0)
	if hw := h.Status().HighWatermark; hw != afterLeaderChange || !h.Status().EpochCommitted {
		t.Fatalf("high watermark %d (epoch committed: %v) after node 2 fetched at %d", hw, h.Status().EpochCommitted, afterLeaderChange)
	}
	for range 20 {
		h.Advance(50)
		process(t, h)
	}
	if log.EndOffset() == afterLeaderChange {
		t.Fatal("no idle record once the epoch had committed")
	}
	raw, _ := log.Read(afterLeaderChange, 1<<20)
	b, err := batch.Decode(raw)
	if err != nil || b.IsControl() {
		t.Fatalf("batch after the LeaderChange: %+v, %v; want the idle record", b, err)
	}
	if rec, err := metadata.DecodeValue(b.Records[0].Value); err != nil {
		t.Fatal(err)
	} else if _, ok := rec.(*metadata.NoOpRecord); !ok {
		t.Fatalf("record after the LeaderChange: %T; want the idle NoOpRecord", rec)
	}
}
