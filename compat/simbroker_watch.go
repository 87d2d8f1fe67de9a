package compat

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/storage/batch"
)

// metadataTopicID is __cluster_metadata's topic id, Uuid(0, 1).
var metadataTopicID = [16]byte{15: 1}

// MetadataWatcher follows __cluster_metadata as a KRaft observer, the way a
// broker's raft client does: Fetch requests to the leader with its broker id
// as ReplicaState.ReplicaId, FetchOffset advancing over the batches it
// receives and LastFetchedEpoch the epoch of the last one. It does not
// decode records: a simulated broker needs only how far the committed log
// has been read, which it reports as CurrentMetadataOffset.
//
// One watcher serves a whole fleet of simulated brokers. A real broker runs
// its own observer, but a thousand of them would make the benchmark measure
// the Go simulator's fetch handling on a 2-core machine as much as the
// controllers; the offset a broker reports is the same either way.
type MetadataWatcher struct {
	replicaID int32
	clusterID string
	locator   *ControllerLocator

	committed atomic.Int64 // last offset fetched and below the high watermark; -1 none
	fetches   atomic.Int64
	// leaders, if set, decodes every batch fetched (LeaderTracker).
	leaders *LeaderTracker
	// snapshots fetches a snapshot the leader sends the watcher to instead
	// of skipping to its end (a new observer's catch-up, as a broker does).
	snapshots     bool
	snapshotBytes atomic.Int64
}

// fetchMaxWait is how long the leader may park an empty fetch, as a
// broker's raft client asks (MAX_FETCH_WAIT_MS).
const fetchMaxWait = 500 * time.Millisecond

// NewMetadataWatcher returns a watcher that fetches as replicaID.
func NewMetadataWatcher(replicaID int32, clusterID string, locator *ControllerLocator) *MetadataWatcher {
	w := &MetadataWatcher{replicaID: replicaID, clusterID: clusterID, locator: locator}
	w.committed.Store(-1)
	return w
}

// Committed is the offset of the last committed record the watcher has
// read, or -1: what a broker whose loader applied everything fetched would
// send as CurrentMetadataOffset.
func (w *MetadataWatcher) Committed() int64 { return w.committed.Load() }

// Fetches counts the Fetch requests answered so far.
func (w *MetadataWatcher) Fetches() int64 { return w.fetches.Load() }

// Run fetches until ctx ends, reconnecting to whichever node leads.
func (w *MetadataWatcher) Run(ctx context.Context) {
	var next int64      // FetchOffset: the end of what has been fetched
	var lastEpoch int32 // epoch of the batch ending at next (0 for an empty log, as Apache's)
	for ctx.Err() == nil {
		addr, epoch, err := w.locator.Leader(ctx)
		if err != nil {
			return
		}
		conn, err := Dial(ctx, addr)
		if err != nil {
			w.locator.Invalidate(addr)
			continue
		}
	fetching:
		for ctx.Err() == nil {
			resp, err := w.fetch(ctx, conn, epoch, next, lastEpoch)
			if err != nil {
				break
			}
			w.fetches.Add(1)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				break
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				if p.ErrorCode != kerr.NotLeaderForPartition.Code && p.ErrorCode != kerr.FencedLeaderEpoch.Code &&
					p.ErrorCode != kerr.UnknownLeaderEpoch.Code && p.ErrorCode != kerr.NotController.Code {
					time.Sleep(PollInterval) // not a leadership question: do not spin
				}
				// Ask the voters again: the same node may lead a later epoch
				// (a fetch in the old one is fenced for good), which the
				// brokers' heartbeats, answered by that node, never reveal.
				w.locator.Invalidate(addr)
				break
			}
			switch {
			case p.DivergingEpoch.EndOffset >= 0:
				// Our log tail is not the leader's: truncate to where they agree.
				next, lastEpoch = p.DivergingEpoch.EndOffset, p.DivergingEpoch.Epoch
				w.leaders.truncate(next)
				continue
			case p.SnapshotID.EndOffset >= 0:
				// Below the log start: a broker loads the snapshot; a
				// watcher that only needs its position skips to its end.
				if w.snapshots {
					if err := w.fetchSnapshot(ctx, conn, epoch, p.SnapshotID.EndOffset, p.SnapshotID.Epoch); err != nil {
						break fetching
					}
				}
				next, lastEpoch = p.SnapshotID.EndOffset, p.SnapshotID.Epoch
				w.leaders.skipped(next)
				continue
			}
			w.leaders.apply(p.RecordBatches, p.HighWatermark)
			next, lastEpoch = advanceOverBatches(p.RecordBatches, next, lastEpoch)
			if c := min(next, p.HighWatermark) - 1; c > w.committed.Load() {
				w.committed.Store(c)
			}
		}
		conn.Close()
		w.locator.Invalidate(addr)
	}
}

func (w *MetadataWatcher) fetch(ctx context.Context, conn *Conn, leaderEpoch int32, offset int64, lastEpoch int32) (*kmsg.FetchResponse, error) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(17)
	req.ClusterID = &w.clusterID
	req.ReplicaState.ID, req.ReplicaState.Epoch = w.replicaID, -1
	req.MaxWaitMillis = int32(fetchMaxWait / time.Millisecond)
	req.MinBytes, req.MaxBytes = 1, 8<<20
	topic := kmsg.NewFetchRequestTopic()
	topic.TopicID = metadataTopicID
	part := kmsg.NewFetchRequestTopicPartition()
	part.CurrentLeaderEpoch, part.FetchOffset, part.LastFetchedEpoch = leaderEpoch, offset, lastEpoch
	part.LogStartOffset, part.PartitionMaxBytes = -1, 8<<20
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	ctx, cancel := context.WithTimeout(ctx, fetchMaxWait+RequestTimeout)
	defer cancel()
	r, err := conn.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return r.(*kmsg.FetchResponse), nil
}

// advanceOverBatches walks RecordBatch v2 headers and returns the offset
// after the last whole batch and that batch's partition leader epoch. A
// batch cut off by the size limit is fetched again next time.
func advanceOverBatches(b []byte, next int64, lastEpoch int32) (int64, int32) {
	r := batch.NewSliceReader(b, 0)
	for {
		h, err := r.NextHeader()
		if err != nil {
			return next, lastEpoch
		}
		next, lastEpoch = h.NextOffset(), h.PartitionLeaderEpoch
	}
}
