package nodetest

import (
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage/batch"
)

// Batches returns every batch the running node's log holds, from its start
// offset, each as its own slice of raw RecordBatch v2 bytes.
func (h *Node) Batches() ([][]byte, error) {
	if h.disk == nil {
		return nil, ErrDown
	}
	log := h.disk.Log
	var out [][]byte
	for next := log.StartOffset(); next < log.EndOffset(); {
		raw, err := log.Read(next, 1<<20)
		if err != nil {
			return out, err
		}
		before := next
		if _, err := batch.Walk(raw, func(hd batch.Header, b []byte) error {
			out = append(out, append([]byte(nil), b...))
			next = hd.NextOffset()
			return nil
		}); err != nil {
			return out, err
		}
		if next == before {
			break // a torn tail: nothing whole to read
		}
	}
	return out, nil
}

// LatestSnapshot is the newest snapshot the core may serve (the bootstrap
// snapshot aside), as the quorum core sees it.
func (h *Node) LatestSnapshot() (quorum.SnapshotID, bool) {
	if h.disk == nil {
		return quorum.SnapshotID{}, false
	}
	return h.disk.QuorumLog().LatestSnapshot()
}
