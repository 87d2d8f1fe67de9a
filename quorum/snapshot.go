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

// snapshotDownload is where a follower's download of the leader's snapshot
// stands: the next chunk starts at pos.
type snapshotDownload struct {
	id  SnapshotID
	pos int64
}

// serveFetchSnapshot answers a FetchSnapshot that passed the common checks
// (checkFetchSnapshot) with a chunk of the latest snapshot: the answer
// names the chunk (its Position, and the Message's SnapshotBytes) but holds
// none of its bytes, which the shell sends from the snapshot file, outside
// the core's loop (see Message.SnapshotBytes).
func (n *Node) serveFetchSnapshot(m Message, req *kmsg.FetchSnapshotRequest) {
	p := req.Topics[0].Partitions[0]
	id := SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}
	refuse := func(code int16) {
		resp, _ := n.fetchSnapshotResponse(req.Version, errNone, code)
		n.respond(m, resp)
	}
	latest, ok := n.latestSnapshot()
	if !ok || latest != id {
		refuse(errSnapshotNotFound)
		return
	}
	maxBytes := n.cfg.MaxFetchBytes
	if req.MaxBytes > 0 {
		maxBytes = min(maxBytes, int(req.MaxBytes))
	}
	// Zero bytes asked: only the size, which costs no read.
	_, size, err := n.log.ReadSnapshot(id, 0, 0)
	if err != nil {
		refuse(errSnapshotNotFound)
		return
	}
	if p.Position < 0 || p.Position >= size {
		refuse(errPositionOutOfRange)
		return
	}
	n.lead.progress.heardFrom(req.ReplicaID, slices.Contains(n.voters, req.ReplicaID), n.now)
	resp, rp := n.fetchSnapshotResponse(req.Version, errNone, errNone)
	rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = id.EndOffset, id.Epoch
	rp.Size, rp.Position = size, p.Position
	n.msgs = append(n.msgs, Message{From: n.id, To: m.From, ReqID: m.ReqID, Response: resp,
		SnapshotBytes: min(int64(maxBytes), size-p.Position)})
}

// takeSnapshotChunk is a follower's step for its leader's FetchSnapshot
// answer (past the common rules): the next chunk of the download, handed to
// the shell in SnapshotChunk; a chunk out of place ends the download, and
// the next Fetch starts over.
func (n *Node) takeSnapshotChunk(from int32, resp *kmsg.FetchSnapshotResponse) {
	p := &resp.Topics[0].Partitions[0]
	if from != n.leaderID || n.snap == nil {
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
	// A chunk is answered when read, never parked: the silence bound,
	// which counts on the leader's parked-fetch answers, does not apply.
	n.heardFromLeader(n.cfg.FetchTimeoutMs)
}
