package nodetest_test

import (
	"testing"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/node/nodetest"
	"github.com/kraftd/kraftd/quorum"
)

// A single voter elects itself, commits a proposal only once the held
// fsync is released, compacts its log into a snapshot and comes back from a
// crash with what it synced.
func TestSingleVoterLifecycle(t *testing.T) {
	mv := &metadata.FeatureLevelRecord{Name: controller.MetadataVersionFeature, FeatureLevel: controller.LatestMetadataVersion}
	h, err := nodetest.New(nodetest.Config{ID: 1, Voters: map[int32][]quorum.Endpoint{1: nil}, HoldSyncs: true, Features: []metadata.Record{mv}})
	if err != nil {
		t.Fatal(err)
	}
	process := func() {
		t.Helper()
		if err := h.Process(); err != nil {
			t.Fatal(err)
		}
	}
	if isClosed(h.Runtime().CaughtUp()) {
		t.Fatal("caught up before any high watermark is known")
	}
	h.Advance(4000)
	process()
	for h.ReleaseSync() { // the LeaderChange batch
		process()
	}
	if st := h.Status(); st.Role != quorum.RoleLeader || st.HighWatermark != 1 {
		t.Fatalf("after the election: %+v; want leader with hw 1", st)
	}
	if !isClosed(h.Runtime().CaughtUp()) {
		t.Fatal("not caught up once leader with everything below the high watermark replayed")
	}

	v := "v"
	committed := int64(-1)
	h.Runtime().Propose(&node.Proposal{
		Records: []metadata.Record{&metadata.ConfigRecord{ResourceType: 4, Name: "k", Value: &v}},
		Done: func(first int64, err error) {
			if err == nil {
				committed = first
			}
		},
	})
	process()
	if _, held := h.HeldSync(); !held || h.Status().HighWatermark != 1 || committed >= 0 {
		t.Fatalf("before the leader's fsync: held %v, hw %d, committed at %d", held, h.Status().HighWatermark, committed)
	}
	h.ReleaseSync()
	process()
	if h.Status().HighWatermark != 2 || committed != 1 {
		t.Fatalf("after the fsync: hw %d, committed at %d; want 2 and 1", h.Status().HighWatermark, committed)
	}

	id, err := h.Runtime().SnapshotNow()
	if err != nil || id.EndOffset != 2 || h.Disk().Log.StartOffset() != 2 {
		t.Fatalf("SnapshotNow: %v, %v, log start %d; want 2@1 and start 2", id, err, h.Disk().Log.StartOffset())
	}

	h.Crash()
	if err := h.Restart(); err != nil {
		t.Fatal(err)
	}
	// Its election timer runs from the restart, not from time 0: it is
	// still Resigned, in the epoch it led.
	if st := h.Status(); st.Role != quorum.RoleResigned || st.Epoch != 1 || st.EndOffset != 2 || st.HighWatermark != 2 {
		t.Fatalf("after the restart: %+v; want Resigned in epoch 1, the log and the snapshot ending at 2", st)
	}
	if snap, ok := h.LatestSnapshot(); !ok || snap.EndOffset != 2 {
		t.Fatalf("latest snapshot after the restart: %v %v", snap, ok)
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
