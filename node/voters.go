package node

import (
	"errors"
	"fmt"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
)

// startQuorum is what the disk says a dynamic quorum's kraft.version and
// voter set are, read as Apache's KRaftControlRecordStateMachine reads them
// when it starts: the newest snapshot's header, then every control record
// of the log after it. Either field is unset (haveKRaft false, voters nil)
// when nothing there names it.
type startQuorum struct {
	kraftVersion int16
	haveKRaft    bool
	voters       *metadata.VotersRecord
}

// readStartQuorum reads log's newest snapshot (the bootstrap snapshot 0-0
// too, when it is the only one) and the control batches after it.
//
// It reads the whole log, committed or not, as Apache does: a restarted
// node cannot know its high watermark until a leader tells it. Apache keeps
// the history by offset so that a truncation can take a change back; here
// the quorum core has no voter changes of its own yet (a leader only
// repeats the set it started with in its start-of-epoch batch), so an
// uncommitted VotersRecord names the set already in force, and the latest
// one is enough.
func readStartQuorum(log *storage.Log) (startQuorum, error) {
	var st startQuorum
	next := log.StartOffset()
	if id, ok := log.LatestSnapshot(); ok {
		info, err := snapshotHeader(log, id)
		if err != nil {
			return st, err
		}
		// The header carries KRaftVersion and Voters together, and only
		// at kraft.version 1 or above (metadata.WriteSnapshot).
		if info.Voters != nil || info.KRaftVersion != 0 {
			st = startQuorum{kraftVersion: info.KRaftVersion, haveKRaft: true, voters: info.Voters}
		}
		next = max(next, id.EndOffset)
	}
	_, err := ForEachControlRecord(log, next, log.EndOffset(), func(offset int64, raw batch.Record) error {
		v, err := metadata.DecodeControl(raw.Key, raw.Value)
		if errors.Is(err, metadata.ErrNotKRaftControl) {
			return nil // a transaction marker or other control record
		}
		if err != nil {
			return fmt.Errorf("offset %d: %w", offset, err)
		}
		switch v := v.(type) {
		case *metadata.KRaftVersionRecord:
			st.kraftVersion, st.haveKRaft = v.KRaftVersion, true
		case *metadata.VotersRecord:
			st.voters = v
		}
		return nil
	})
	return st, err
}

// loadQuorum sets the disk's kraft.version and voter set from the snapshot
// and log (readStartQuorum). The bootstrap snapshot's, which storage read
// on its own, count only where nothing later names one: retention deletes
// that file once a newer snapshot covers it, and the newer snapshot then
// carries the set forward.
func (d *Disk) loadQuorum() error {
	st, err := readStartQuorum(d.Log)
	if err != nil {
		return fmt.Errorf("reading the voter set from the metadata log: %w", err)
	}
	d.voters, d.KRaftVersion = d.node.Voters, d.node.KRaftVersion
	if st.voters != nil {
		d.voters = st.voters
	}
	if st.haveKRaft {
		d.KRaftVersion = st.kraftVersion
	}
	return nil
}

// snapshotHeader reads snapshot id's header batch: it stops at the first
// data record, so the size of the image does not matter.
func snapshotHeader(log *storage.Log, id storage.SnapshotID) (metadata.SnapshotInfo, error) {
	r, err := log.OpenSnapshot(id)
	if err != nil {
		return metadata.SnapshotInfo{}, err
	}
	defer r.Close()
	info, err := metadata.ReadSnapshot(&snapshotSource{r: r}, func(metadata.Record) error { return errStopWalk })
	if err != nil && !errors.Is(err, errStopWalk) {
		return info, fmt.Errorf("snapshot %s: %w", id, err)
	}
	return info, nil
}
