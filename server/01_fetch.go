package server

// Fetch: v4-18
//
// Version notes:
//   - v12: flexible; LastFetchedEpoch, DivergingEpoch, CurrentLeader, SnapshotId.
//   - v13: topic ids replace topic names (the metadata topic id is Uuid(0,1)).
//   - v15: ReplicaState replaces ReplicaId.
//   - v16: NodeEndpoints in the response (filled by the quorum leader from v17).
//   - v17: ReplicaDirectoryId (KIP-853).
//   - v18: HighWatermark in the request (KIP-1166): a fetcher behind the
//     leader's high watermark is answered at once.
//
// The quorum answers it (see stepQuorum). Its records are the answer's
// own, read from the log for it: once encoded they go back to the log's
// read buffers (recycleRecords).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/storage"
)

func init() {
	regKey(1, 4, 18, (*Server).stepQuorum,
		accessRule{name: "Fetch", cluster: authz.OpClusterAction})
}

// recycleRecords gives back the records of a Fetch answer just encoded.
func recycleRecords(f *kmsg.FetchResponse) {
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			p := &f.Topics[i].Partitions[j]
			storage.RecycleRead(p.RecordBatches)
			p.RecordBatches = nil
		}
	}
}
