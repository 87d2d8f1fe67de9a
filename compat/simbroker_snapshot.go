package compat

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// snapshotChunk is how much of a snapshot one FetchSnapshot asks for, as a
// broker's raft client asks (its fetch max bytes).
const snapshotChunk = 8 << 20

// fetchSnapshot downloads the snapshot (endOffset, epoch) from the leader
// on conn with FetchSnapshot, chunk by chunk, and drops the bytes: a new
// observer sent to a snapshot costs the leader the whole download, which is
// what a catch-up storm measures. It counts the bytes in SnapshotBytes.
func (w *MetadataWatcher) fetchSnapshot(ctx context.Context, conn *Conn, leaderEpoch int32, endOffset int64, epoch int32) error {
	var position int64
	for {
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.SetVersion(0)
		req.ClusterID = &w.clusterID
		req.ReplicaID, req.MaxBytes = w.replicaID, snapshotChunk
		topic := kmsg.NewFetchSnapshotRequestTopic()
		topic.Topic = "__cluster_metadata"
		part := kmsg.NewFetchSnapshotRequestTopicPartition()
		part.Partition, part.CurrentLeaderEpoch = 0, leaderEpoch
		part.SnapshotID.EndOffset, part.SnapshotID.Epoch = endOffset, epoch
		part.Position = position
		topic.Partitions = append(topic.Partitions, part)
		req.Topics = append(req.Topics, topic)
		rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
		r, err := conn.Request(rctx, req)
		cancel()
		if err != nil {
			return err
		}
		resp := r.(*kmsg.FetchSnapshotResponse)
		if resp.ErrorCode != 0 {
			return errorf("FetchSnapshot: error code %d", resp.ErrorCode)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return errorf("FetchSnapshot: %d topics in the answer", len(resp.Topics))
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return errorf("FetchSnapshot: partition error code %d", p.ErrorCode)
		}
		if p.Position != position || len(p.Bytes) == 0 && position < p.Size {
			return errorf("FetchSnapshot: asked for position %d, got %d bytes at %d of %d", position, len(p.Bytes), p.Position, p.Size)
		}
		position += int64(len(p.Bytes))
		w.snapshotBytes.Add(int64(len(p.Bytes)))
		if position >= p.Size {
			return nil
		}
	}
}

// SnapshotBytes counts the snapshot bytes the watcher downloaded.
func (w *MetadataWatcher) SnapshotBytes() int64 { return w.snapshotBytes.Load() }

// FetchSnapshots makes the watcher download a snapshot the leader sends it
// to, as a new broker does, instead of skipping to its end. Call it before
// Run.
func (w *MetadataWatcher) FetchSnapshots() *MetadataWatcher {
	w.snapshots = true
	return w
}
