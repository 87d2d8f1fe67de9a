package nodetest_test

import (
	"reflect"
	"testing"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/node/nodetest"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage"
)

// A standalone (dynamic) quorum whose snapshot retention deleted the
// bootstrap snapshot 0-0, the file `format` wrote the voter set into,
// restarts with that voter set and leads again: the newer snapshot's
// header and the log's start-of-epoch batches carry it (issue 11, defect 3).
func TestStandaloneRestartsAfterRetentionDeletedBootstrapSnapshot(t *testing.T) {
	mv := &metadata.FeatureLevelRecord{Name: controller.MetadataVersionFeature, FeatureLevel: controller.LatestMetadataVersion}
	h, err := nodetest.New(nodetest.Config{
		ID: 1, Standalone: true, Features: []metadata.Record{mv},
		// A snapshot at every commit, and no history kept
		// (metadata.max.retention.bytes=1).
		Tune: func(c *node.Config) {
			c.Snapshots = node.SnapshotPolicy{MaxBytes: 1, RetentionBytes: 1, RetentionMs: -1}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	want, wantKRaft := h.Status().Voters, h.Status().KRaftVersion
	if wantKRaft != 1 || len(want) != 1 {
		t.Fatalf("formatted voter set %v, kraft.version %d", want, wantKRaft)
	}
	// lead runs election timeouts until the node leads (a restarted
	// leader passes through Resigned and Unattached first).
	lead := func() {
		t.Helper()
		for range 5 {
			h.Advance(4000)
			if err := h.Process(); err != nil {
				t.Fatal(err)
			}
			if h.Status().Role == quorum.RoleLeader {
				return
			}
		}
		t.Fatalf("%+v; want leader", h.Status())
	}
	lead()
	committed := 0
	for i := range 3 {
		v := string(rune('a' + i))
		h.Runtime().Propose(&node.Proposal{
			Records: []metadata.Record{&metadata.ConfigRecord{ResourceType: 4, Name: "k", Value: &v}},
			Done: func(_ int64, err error) {
				if err == nil {
					committed++
				}
			},
		})
		if err := h.Process(); err != nil {
			t.Fatal(err)
		}
	}
	if committed != 3 {
		t.Fatalf("%d of 3 proposals committed", committed)
	}
	snaps := h.Disk().Log.Snapshots()
	if len(snaps) == 0 || snaps[0] == storage.BootstrapSnapshotID || h.Disk().Log.StartOffset() == 0 {
		t.Fatalf("retention kept the bootstrap snapshot: snapshots %v, log start %d", snaps, h.Disk().Log.StartOffset())
	}

	if err := h.Restart(); err != nil {
		t.Fatalf("restart after retention: %v", err)
	}
	got, gotKRaft := h.Status().Voters, h.Status().KRaftVersion
	if gotKRaft != wantKRaft || !reflect.DeepEqual(got, want) {
		t.Fatalf("after the restart: voters %v, kraft.version %d; want %v and %d", got, gotKRaft, want, wantKRaft)
	}
	lead()
}
