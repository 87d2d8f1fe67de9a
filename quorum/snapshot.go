// snapshot.go owns snapshots on the wire: the leader serving FetchSnapshot
// chunks, and a follower downloading the snapshot its leader named.

package quorum

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// latestSnapshot is the newest snapshot the leader may serve: never the
// bootstrap snapshot 0-0, which holds only this node's formatting.
func (n *Node) latestSnapshot() (SnapshotID, bool) {
	id, ok := n.log.LatestSnapshot()
	if !ok || id == (SnapshotID{}) {
		return SnapshotID{}, false
	}
	return id, true
}

type snapshotDownload struct {
	id  SnapshotID
	pos int64
}

func (n *Node) handleFetchSnapshot(req *kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse {
	if !n.clusterIDOK(req.ClusterID) {
		resp, _ := n.fetchSnapshotResponse(req.Version, errInconsistentClusterID, errNone)
		resp.Topics = nil
		return resp
	}
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 ||
		!singlePartition(1, req.Topics[0].Topic, 1, req.Topics[0].Partitions[0].Partition) {
		resp, _ := n.fetchSnapshotResponse(req.Version, errInvalidRequest, errNone)
		resp.Topics = nil
		return resp
	}
	p := req.Topics[0].Partitions[0]
	if code := n.validateLeaderOnly(p.CurrentLeaderEpoch); code != errNone {
		resp, _ := n.fetchSnapshotResponse(req.Version, errNone, code)
		return resp
	}
	id := SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}
	latest, ok := n.latestSnapshot()
	if !ok || latest != id {
		resp, _ := n.fetchSnapshotResponse(req.Version, errNone, errSnapshotNotFound)
		return resp
	}
	maxBytes := n.cfg.MaxFetchBytes
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, int(req.MaxBytes))
	}
	data, size, err := n.log.ReadSnapshot(id, p.Position, maxBytes)
	if err != nil {
		resp, _ := n.fetchSnapshotResponse(req.Version, errNone, errSnapshotNotFound)
		return resp
	}
	if p.Position < 0 || p.Position >= size {
		resp, _ := n.fetchSnapshotResponse(req.Version, errNone, errPositionOutOfRange)
		return resp
	}
	n.lead.progress.heardFrom(req.ReplicaID, n.now)
	resp, rp := n.fetchSnapshotResponse(req.Version, errNone, errNone)
	rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = id.EndOffset, id.Epoch
	rp.Size, rp.Position, rp.Bytes = size, p.Position, data
	return resp
}

func (n *Node) handleFetchSnapshotResponse(from int32, resp *kmsg.FetchSnapshotResponse, out outRequest) {
	if resp.ErrorCode != errNone || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		n.backoff(from)
		return
	}
	p := &resp.Topics[0].Partitions[0]
	current := n.sentInThisState(out)
	if n.handleCommonResponse(p.ErrorCode, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch) {
		if p.ErrorCode == errSnapshotNotFound || p.ErrorCode == errPositionOutOfRange {
			n.snap = nil // start over with a Fetch, which names the current snapshot
		}
		n.backoffUnlessMoved(from, p.ErrorCode, out)
		return
	}
	if !current || n.role != RoleFollower || from != n.leaderID || n.snap == nil {
		return
	}
	id := SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}
	if id != n.snap.id || p.Position != n.snap.pos || p.Size <= 0 {
		n.snap = nil
		return
	}
	chunk := &SnapshotChunk{ID: id, Position: p.Position, Data: slices.Clone(p.Bytes)}
	n.snap.pos += int64(len(p.Bytes))
	if n.snap.pos >= p.Size {
		chunk.Done = true
		// Installing the snapshot replaces the whole log.
		n.endOffset, n.lastEpoch = id.EndOffset, id.Epoch
	}
	n.snapChunk = chunk
	n.fetchDeadline = n.now + n.cfg.FetchTimeoutMs
	n.hasFetchedFromLeader = true
}
