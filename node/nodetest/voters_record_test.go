package nodetest_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/node/nodetest"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage/batch"
)

// votersRecords lists every VotersRecord of h's log with its offset.
func votersRecords(t *testing.T, h *nodetest.Node) map[int64]*metadata.VotersRecord {
	t.Helper()
	batches, err := h.Batches()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]*metadata.VotersRecord{}
	for _, raw := range batches {
		b, err := batch.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !b.IsControl() {
			continue
		}
		for _, r := range b.Records {
			if v, err := metadata.DecodeControl(r.Key, r.Value); err == nil {
				if vr, ok := v.(*metadata.VotersRecord); ok {
					out[b.BaseOffset+int64(r.OffsetDelta)] = vr
				}
			}
		}
	}
	return out
}

// leadAlone runs election timeouts until the standalone node h leads.
func leadAlone(t *testing.T, h *nodetest.Node) {
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

// describedVoterDir is the directory id h's DescribeQuorum (v2) shows for
// voter id.
func describedVoterDir(t *testing.T, h *nodetest.Node, id int32) [16]byte {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	var resp *kmsg.DescribeQuorumResponse
	h.Inbound(req, func(r kmsg.Response) { resp, _ = r.(*kmsg.DescribeQuorumResponse) })
	if err := h.Process(); err != nil || resp == nil {
		t.Fatalf("DescribeQuorum: %v, %v", resp, err)
	}
	for _, v := range resp.Topics[0].Partitions[0].CurrentVoters {
		if v.ReplicaID == id {
			return v.ReplicaDirectoryID
		}
	}
	t.Fatalf("voter %d not described: %+v", id, resp.Topics[0].Partitions[0])
	return [16]byte{}
}

// A standalone leader's first VotersRecord (offset 2) names its real
// directory id, the one meta.properties holds and DescribeQuorum shows;
// kraftd wrote a zero id there (issue 12, deliverable 4).
func TestStandaloneLeaderWritesItsDirectoryID(t *testing.T) {
	mv := &metadata.FeatureLevelRecord{Name: controller.MetadataVersionFeature, FeatureLevel: controller.LatestMetadataVersion}
	h, err := nodetest.New(nodetest.Config{ID: 1, Standalone: true, Features: []metadata.Record{mv}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	leadAlone(t, h)
	dir := h.Disk().Meta.DirectoryID
	recs := votersRecords(t, h)
	vr := recs[2]
	if len(recs) != 1 || vr == nil || len(vr.Voters) != 1 {
		t.Fatalf("VotersRecords %+v; want one at offset 2", recs)
	}
	if got := vr.Voters[0]; got.VoterId != 1 || got.VoterDirectoryId != dir {
		t.Fatalf("VotersRecord names voter %d dir %x; want 1 and %x", got.VoterId, got.VoterDirectoryId, dir)
	}
	if got := describedVoterDir(t, h, 1); got != dir {
		t.Fatalf("DescribeQuorum shows dir %x, want %x", got, dir)
	}
	// A snapshot after it repeats the set, with the directory id.
	v := "x"
	h.Runtime().Propose(&node.Proposal{Records: []metadata.Record{&metadata.ConfigRecord{ResourceType: 4, Name: "k", Value: &v}}, Done: func(int64, error) {}})
	if err := h.Process(); err != nil {
		t.Fatal(err)
	}
	id, err := h.Runtime().SnapshotNow()
	if err != nil {
		t.Fatal(err)
	}
	_, info, err := h.Disk().LoadSnapshot(id)
	if err != nil || info.KRaftVersion != 1 || info.Voters == nil || len(info.Voters.Voters) != 1 || info.Voters.Voters[0].VoterDirectoryId != dir {
		t.Fatalf("snapshot %v header: kraft.version %d, voters %+v, %v; want 1 and voter 1 with dir %x", id, info.KRaftVersion, info.Voters, err, dir)
	}
	// The next epoch has nothing to put right: no second VotersRecord,
	// as Apache's leader writes none.
	if err := h.Restart(); err != nil {
		t.Fatal(err)
	}
	leadAlone(t, h)
	if recs := votersRecords(t, h); len(recs) != 0 {
		t.Fatalf("after a new epoch: VotersRecords at %v past the snapshot; want none", keys(recs))
	}
	if v, _ := h.Status().Voters.Get(1); v.DirectoryID != dir {
		t.Fatalf("the voter set read back from the snapshot names dir %x, want %x", v.DirectoryID, dir)
	}
}

// A log an older kraftd wrote, whose VotersRecord names the leader with a
// zero directory id, is repaired as Apache 4.4 repairs it: the next leader
// of that node writes a second VotersRecord with its real directory id.
func TestLeaderRepairsZeroDirectoryID(t *testing.T) {
	h, err := nodetest.New(nodetest.Config{ID: 1, Standalone: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// Epoch 1 as the older kraftd wrote it, before this node ran.
	ep := nodetest.StandaloneEndpoint
	zero := &metadata.VotersRecord{Voters: []metadata.VotersRecordVoter{{VoterId: 1,
		Endpoints:           []metadata.VotersRecordEndpoint{{Name: ep.Name, Host: ep.Host, Port: ep.Port}},
		KRaftVersionFeature: metadata.VotersRecordKRaftVersionFeature{MaxSupportedVersion: 1}}}}
	recs := []batch.Record{controlRecord(&metadata.LeaderChangeMessage{LeaderId: 1}),
		controlRecord(&metadata.KRaftVersionRecord{KRaftVersion: 1}), controlRecord(zero)}
	if err := h.Disk().Log.Append(batch.Builder{BaseOffset: 0, LeaderEpoch: 1, Control: true}.Encode(nil, recs)); err != nil {
		t.Fatal(err)
	}
	if err := h.Disk().Log.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := h.Restart(); err != nil {
		t.Fatal(err)
	}
	if v, _ := h.Status().Voters.Get(1); v.DirectoryID != [16]byte{} {
		t.Fatalf("the voter set read from the log names dir %x; want zero", v.DirectoryID)
	}
	leadAlone(t, h)
	dir := h.Disk().Meta.DirectoryID
	got := votersRecords(t, h)
	if len(got) != 2 || got[2] == nil || got[5] == nil {
		t.Fatalf("VotersRecords at %v; want 2 (the old one) and 5 (the repair)", keys(got))
	}
	if v := got[5].Voters; len(v) != 1 || v[0].VoterDirectoryId != dir {
		t.Fatalf("repaired VotersRecord %+v; want voter 1 with dir %x", got[5], dir)
	}
	if v, _ := h.Status().Voters.Get(1); v.DirectoryID != dir {
		t.Fatalf("voter set after the repair names dir %x, want %x", v.DirectoryID, dir)
	}
}

func controlRecord(v metadata.ControlValue) batch.Record {
	key, value := metadata.EncodeControl(v)
	return batch.Record{Key: key, Value: value}
}

func keys(m map[int64]*metadata.VotersRecord) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	return out
}
