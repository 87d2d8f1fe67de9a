package node

import (
	"errors"
	"fmt"

	"github.com/kraftd/kraftd/storage"
)

// ErrNothingToSnapshot is returned by SnapshotNow when no whole batch above
// the log start has committed yet.
var ErrNothingToSnapshot = errors.New("node: no committed batch to snapshot")

// SnapshotNow writes a snapshot ending at the last whole committed batch,
// on the calling (loop) goroutine, and deletes the log prefix and the older
// snapshots it covers, as retention with no history to keep would. It is
// for tests and tools that need a compacted log at a known point: the
// scenario transcripts use it to send a lagging follower to FetchSnapshot.
// The policy-driven path (MaybeSnapshot) writes in the background instead.
func (n *Node) SnapshotNow() (storage.SnapshotID, error) {
	s := n.snapshots
	s.collect(true) // never two writers of one snapshot file
	if err := s.scan(n.hw); err != nil {
		return storage.SnapshotID{}, err
	}
	point := s.point
	log := n.disk.Log
	if point.id.EndOffset <= log.StartOffset() {
		return storage.SnapshotID{}, ErrNothingToSnapshot
	}
	if latest, ok := log.LatestSnapshot(); !ok || latest.EndOffset < point.id.EndOffset {
		if err := s.writeAndClean(point, s.stateAt(point), s.frozenAt(point)); err != nil {
			return storage.SnapshotID{}, err
		}
	}
	// The policy counts from here, as after a snapshot it wrote itself.
	s.bytesSince, s.newRecords, s.lastSnapshot = 0, false, s.now()
	deleteBefore(log, point.id, s.logger, "SnapshotNow")
	if log.StartOffset() < point.id.EndOffset {
		return point.id, fmt.Errorf("node: snapshot %s written but the log still starts at %d", point.id, log.StartOffset())
	}
	return point.id, nil
}
