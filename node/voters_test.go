package node

import (
	"testing"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
)

func votersOf(ids ...int32) *metadata.VotersRecord {
	set := &metadata.VotersRecord{}
	for _, id := range ids {
		set.Voters = append(set.Voters, metadata.VotersRecordVoter{VoterId: id,
			Endpoints: []metadata.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "localhost", Port: uint16(9092 + id)}}})
	}
	return set
}

// The start-up voter set is the newest snapshot's, unless the log after
// it names a later one; nothing at all leaves both fields unset, for the
// bootstrap snapshot's to stand in.
func TestReadStartQuorum(t *testing.T) {
	l := newSnapshotLog(t)
	if st, err := readStartQuorum(l.log); err != nil || st.haveKRaft || st.voters != nil {
		t.Fatalf("empty log: %+v, %v", st, err)
	}
	l.append(1, &metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27})
	l.appendControl(1, &metadata.KRaftVersionRecord{KRaftVersion: 1})
	l.appendControl(1, votersOf(1))
	l.topic(0)
	end := l.log.EndOffset()
	im, state, err := rebuildImage(l.log, end)
	if err != nil {
		t.Fatal(err)
	}
	point := snapshotPoint{id: storage.SnapshotID{EndOffset: end, Epoch: 1}}
	if _, err := writeSnapshot(l.log, point, im, state, wallClock{}.Now()); err != nil {
		t.Fatal(err)
	}
	if err := l.log.DeleteSegmentsBefore(end); err != nil {
		t.Fatal(err)
	}
	st, err := readStartQuorum(l.log)
	if err != nil || !st.haveKRaft || st.kraftVersion != 1 || st.voters == nil || len(st.voters.Voters) != 1 {
		t.Fatalf("from the snapshot: %+v, %v", st, err)
	}
	l.appendControl(1, votersOf(1, 2))
	l.topic(1)
	st, err = readStartQuorum(l.log)
	if err != nil || st.kraftVersion != 1 || st.voters == nil || len(st.voters.Voters) != 2 {
		t.Fatalf("from the log after the snapshot: %+v, %v", st, err)
	}
}
