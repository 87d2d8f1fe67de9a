package storage

import (
	"fmt"
	"slices"
)

// The Log tracks the snapshots in its directory because LastEpoch and
// EndOffsetForEpoch depend on them, as in KafkaMetadataLog. Create and
// delete snapshots through the Log methods so it stays in step.

// loadSnapshots is KafkaMetadataLog.recoverSnapshots plus
// truncateToLatestSnapshot: drop leftovers and snapshots older than the log,
// insist that a log not starting at 0 is covered by a snapshot, and empty
// the log when the newest snapshot is ahead of it (a crash after a snapshot
// download, before the log was reset).
func (l *Log) loadSnapshots() error {
	ids, err := ListSnapshots(l.fs, l.dir)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if id.EndOffset < l.start {
			l.log.Info().Stringer("snapshot", id).Int64("log_start", l.start).Msg("deleting snapshot older than the log")
			if err := DeleteSnapshot(l.fs, l.dir, id); err != nil {
				return err
			}
			continue
		}
		l.snapshots = append(l.snapshots, id)
	}
	n := len(l.snapshots)
	if l.start > 0 && (n == 0 || l.snapshots[n-1].EndOffset < l.start) {
		return fmt.Errorf("storage: inconsistent metadata log: it starts at %d but no snapshot reaches that offset (snapshots %v)", l.start, l.snapshots)
	}
	if n == 0 {
		return nil
	}
	latest := l.snapshots[n-1]
	lastEpoch := int32(0)
	if e, ok := l.epochs.latest(); ok {
		lastEpoch = e.Epoch
	}
	if latest.Epoch > lastEpoch || (latest.Epoch == lastEpoch && latest.EndOffset > l.active().next) {
		l.log.Warn().Stringer("snapshot", latest).Int64("end_offset", l.active().next).Int32("last_epoch", lastEpoch).
			Msg("newest snapshot is ahead of the log; emptying the log to start at it")
		return l.resetLocked(latest.EndOffset)
	}
	return nil
}

// forgetSnapshotsBefore deletes the snapshots ending before offset.
func (l *Log) forgetSnapshotsBefore(offset int64) error {
	keep := l.snapshots[:0]
	for _, id := range l.snapshots {
		if id.EndOffset < offset {
			if err := DeleteSnapshot(l.fs, l.dir, id); err != nil {
				return err
			}
			continue
		}
		keep = append(keep, id)
	}
	l.snapshots = keep
	return nil
}

// CreateSnapshot starts writing snapshot id in the log directory; once
// frozen the log knows it. Checking that id is batch aligned and not above
// the high watermark is the caller's job.
func (l *Log) CreateSnapshot(id SnapshotID) (*SnapshotWriter, error) {
	w, err := CreateSnapshot(l.fs, l.dir, id)
	if err != nil {
		return nil, err
	}
	w.onFreeze = l.addSnapshot
	return w, nil
}

func (l *Log) addSnapshot(id SnapshotID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, found := slices.BinarySearchFunc(l.snapshots, id, compareSnapshotIDs)
	if !found {
		l.snapshots = slices.Insert(l.snapshots, i, id)
	}
}

// OpenSnapshot opens a frozen snapshot of the log directory.
func (l *Log) OpenSnapshot(id SnapshotID) (*SnapshotReader, error) {
	return OpenSnapshot(l.fs, l.dir, id)
}

// DeleteSnapshot deletes a snapshot of the log directory.
func (l *Log) DeleteSnapshot(id SnapshotID) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := DeleteSnapshot(l.fs, l.dir, id); err != nil {
		return err
	}
	l.snapshots = slices.DeleteFunc(l.snapshots, func(s SnapshotID) bool { return s == id })
	return nil
}

// Snapshots lists the log's frozen snapshots, oldest first.
func (l *Log) Snapshots() []SnapshotID {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.snapshots)
}

// LatestSnapshot is the newest frozen snapshot.
func (l *Log) LatestSnapshot() (SnapshotID, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.snapshots) == 0 {
		return SnapshotID{}, false
	}
	return l.snapshots[len(l.snapshots)-1], true
}

// EarliestSnapshot is the oldest frozen snapshot.
func (l *Log) EarliestSnapshot() (SnapshotID, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.snapshots) == 0 {
		return SnapshotID{}, false
	}
	return l.snapshots[0], true
}
