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
		var a chunkAnswer
		err := conn.RequestStream(rctx, req, func(r *StreamReader) error {
			a = readChunkAnswer(r)
			return r.Err()
		})
		cancel()
		if err != nil {
			return err
		}
		if err := a.check(position); err != nil {
			return err
		}
		position += max(a.length, 0)
		w.snapshotBytes.Add(max(a.length, 0))
		if position >= a.size {
			return nil
		}
	}
}

// chunkAnswer is what an observer needs of a FetchSnapshot answer to go
// on downloading: its errors, and where its chunk lies in the snapshot.
type chunkAnswer struct {
	errorCode, partitionError int16
	partitions                int
	size, position, length    int64
}

// readChunkAnswer reads a FetchSnapshot v0-1 answer body, dropping the
// chunk's bytes as they arrive.
func readChunkAnswer(r *StreamReader) chunkAnswer {
	var a chunkAnswer
	r.Int32() // throttle
	a.errorCode = r.Int16()
	for topics := r.CompactLength(); topics > 0 && r.Err() == nil; topics-- {
		r.SkipCompact() // topic name
		for parts := r.CompactLength(); parts > 0 && r.Err() == nil; parts-- {
			a.partitions++
			r.Int32() // partition index
			a.partitionError = r.Int16()
			r.Int64() // snapshot id: end offset,
			r.Int32() // epoch,
			r.SkipTags()
			a.size, a.position = r.Int64(), r.Int64()
			a.length = r.SkipCompact()
			r.SkipTags() // the current leader among them
		}
		r.SkipTags()
	}
	r.SkipTags() // v1's node endpoints among them
	return a
}

// check reports an answer that is an error, or is not the one chunk asked
// for at position.
func (a chunkAnswer) check(position int64) error {
	switch {
	case a.errorCode != 0:
		return errorf("FetchSnapshot: error code %d", a.errorCode)
	case a.partitions != 1:
		return errorf("FetchSnapshot: %d partitions in the answer", a.partitions)
	case a.partitionError != 0:
		return errorf("FetchSnapshot: partition error code %d", a.partitionError)
	case a.position != position || a.length <= 0 && position < a.size:
		return errorf("FetchSnapshot: asked for position %d, got %d bytes at %d of %d", position, a.length, a.position, a.size)
	}
	return nil
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
