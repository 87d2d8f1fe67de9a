// fetch.go owns the leader's side of Fetch: checking a fetcher's position
// against the log, answering with records, a diverging epoch or a snapshot id,
// parking a fetch until there is something to answer, and recording the
// fetcher's progress.

package quorum

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// serveFetch answers a follower's or observer's Fetch that passed the
// common checks (checkFetch), or parks it until the log grows, the HW
// moves, or MaxWaitMs passes.
func (n *Node) serveFetch(m Message, req *kmsg.FetchRequest) {
	p := req.Topics[0].Partitions[0]
	resp := n.tryCompleteFetch(m, req, nil)
	rp := &resp.Topics[0].Partitions[0]
	if len(rp.RecordBatches) > 0 || req.MaxWaitMillis == 0 ||
		rp.DivergingEpoch.Epoch >= 0 || rp.SnapshotID.Epoch >= 0 || rp.SnapshotID.EndOffset >= 0 || n.fetcherBehindHW(req, rp.HighWatermark) {
		n.answerFetch(m, resp)
		return
	}
	n.lead.parked = append(n.lead.parked, parkedFetch{in: m, original: resp, offset: p.FetchOffset, deadline: n.now + int64(req.MaxWaitMillis)})
}

// fetcherBehindHW reports whether the fetcher of req knows an older high
// watermark than hw: the one it sent (v18+), else, for an observer (a
// broker), the one last answered to it in this leadership. Apache parks a
// fetch below v18 with no records until MaxWaitMs even when the HW moved
// past the last answer just before it came, so a broker learns of the
// commit up to 500 ms late. Voters' fetches below v18 wait as Apache's do:
// they are what moves the HW, and their timing stays Apache's.
func (n *Node) fetcherBehindHW(req *kmsg.FetchRequest, hw int64) bool {
	p := req.Topics[0].Partitions[0]
	if req.Version >= 18 {
		return p.HighWatermark < hw
	}
	r := n.lead.progress.known(fetchReplicaID(req), p.ReplicaDirectoryID)
	return r != nil && !r.voter && r.answeredHW != noAnsweredHW && r.answeredHW < hw
}

// answerFetch sends a Fetch answer and notes the high watermark it told.
func (n *Node) answerFetch(m Message, resp *kmsg.FetchResponse) {
	req := m.Request.(*kmsg.FetchRequest)
	if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
		if r := n.lead.progress.known(fetchReplicaID(req), req.Topics[0].Partitions[0].ReplicaDirectoryID); r != nil {
			r.answeredHW = resp.Topics[0].Partitions[0].HighWatermark
		}
	}
	n.respond(m, resp)
}

func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// tryCompleteFetch validates the fetch position against the leader's log
// and builds the answer: records, a diverging epoch, or a snapshot id. The
// fetch passed checkFetch in this epoch (a parked one when it was parked:
// parked fetches do not outlive the leadership). A non-nil reuse, an
// answer of the node's own never sent, is rewritten as the answer. The
// answer's records are its own: nothing else refers to them.
func (n *Node) tryCompleteFetch(m Message, req *kmsg.FetchRequest, reuse *kmsg.FetchResponse) *kmsg.FetchResponse {
	p := req.Topics[0].Partitions[0]
	var records []byte
	diverging := SnapshotID{EndOffset: -1, Epoch: -1}
	snapshot := SnapshotID{EndOffset: -1, Epoch: -1}
	latest, hasSnap := n.latestSnapshot()
	if p.FetchOffset == 0 && hasSnap {
		// An empty follower is better served by the snapshot than the log.
		snapshot = latest
	} else {
		kind, id := n.validateOffsetAndEpoch(p.FetchOffset, p.LastFetchedEpoch)
		switch kind {
		case fetchSnapshot:
			snapshot = id
		case fetchDiverging:
			diverging = id
		default:
			maxBytes := n.cfg.MaxFetchBytes
			if req.MaxBytes > 0 {
				maxBytes = min(maxBytes, int(req.MaxBytes))
			}
			if p.PartitionMaxBytes > 0 {
				maxBytes = min(maxBytes, int(p.PartitionMaxBytes))
			}
			if p.FetchOffset < n.log.EndOffset() {
				if data, err := n.log.Read(p.FetchOffset, maxBytes); err == nil {
					records = data
				}
			} else if p.FetchOffset < n.endOffset {
				// A copy: the answer's records are its own (the server
				// may recycle them once encoded), and these are the
				// batches still being written.
				records = slices.Clone(readPending(n.appendBuf, p.FetchOffset, maxBytes))
			}
			n.updateReplica(fetchReplicaID(req), p.ReplicaDirectoryID, p.FetchOffset)
		}
	}
	resp, rp := n.refillFetchResponse(reuse, req.Version, errNone, n.lead.progress.hw)
	rp.RecordBatches = records
	rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = diverging.Epoch, diverging.EndOffset
	rp.SnapshotID.Epoch, rp.SnapshotID.EndOffset = snapshot.Epoch, snapshot.EndOffset
	return resp
}

type fetchValidity int

const (
	fetchValid fetchValidity = iota
	fetchDiverging
	fetchSnapshot
)

// validateOffsetAndEpoch is Apache's ReplicatedLog.validateOffsetAndEpoch:
// a fetcher behind the earliest snapshot (or at the log start with another
// epoch, or with an epoch older than that snapshot's) is sent to the latest
// snapshot; one whose epoch ends earlier here than it thinks is diverging.
func (n *Node) validateOffsetAndEpoch(offset int64, epoch int32) (fetchValidity, SnapshotID) {
	start := n.log.StartOffset()
	if start == 0 && offset == 0 {
		return fetchValid, SnapshotID{}
	}
	if earliest, ok := n.log.EarliestSnapshot(); ok &&
		(offset < start || (offset == start && epoch != earliest.Epoch) || epoch < earliest.Epoch) {
		// Only a log that starts at 0 can be left with nothing but the
		// bootstrap snapshot, and offset 0 was answered above; so a snapshot
		// to send exists whenever this branch can be reached.
		if latest, ok := n.latestSnapshot(); ok {
			return fetchSnapshot, latest
		}
	}
	end, found := n.endOffsetForEpoch(epoch)
	if found != epoch || end < offset {
		return fetchDiverging, SnapshotID{EndOffset: end, Epoch: found}
	}
	return fetchValid, SnapshotID{}
}

// updateReplica records a valid fetch position (never a diverging one,
// KAFKA-13141), refreshes check-quorum and may move the HW.
func (n *Node) updateReplica(id int32, dir [16]byte, fetchOffset int64) {
	if id < 0 || id == n.id {
		return
	}
	voter := n.lead.progress.fetched(id, dir, fetchOffset, n.now)
	n.lead.progress.heardFrom(id, voter, n.now)
	if voter {
		n.maybeAdvanceHighWatermark()
	}
}

// maybeAdvanceHighWatermark moves the leader's HW as far as a majority of
// voters holds, and answers the parked fetches when it moves.
func (n *Node) maybeAdvanceHighWatermark() {
	if !n.lead.progress.advanceHighWatermark() {
		return
	}
	if hw := n.lead.progress.hw; hw > n.hw {
		n.hw = hw
	}
	n.voterChangeCommitted()
	n.completeParkedFetches(func(parkedFetch) bool { return true })
}

// leaderDurableTo counts the leader's own log, durable below leo, toward
// the high watermark.
func (n *Node) leaderDurableTo(leo int64) {
	if n.lead.progress.selfDurable(leo, n.now) {
		n.maybeAdvanceHighWatermark()
	}
}

func (n *Node) completeParkedFetches(ready func(parkedFetch) bool) {
	if n.lead == nil {
		return
	}
	parked := n.lead.parked
	n.lead.parked = nil
	for _, p := range parked {
		if !ready(p) {
			n.lead.parked = append(n.lead.parked, p)
			continue
		}
		// The original answer, never sent now, is rewritten as the answer.
		n.answerFetch(p.in, n.tryCompleteFetch(p.in, p.in.Request.(*kmsg.FetchRequest), p.original))
	}
}

func (n *Node) expireParkedFetches() {
	parked := n.lead.parked
	n.lead.parked = nil
	for _, p := range parked {
		if n.now >= p.deadline {
			n.answerFetch(p.in, p.original)
		} else {
			n.lead.parked = append(n.lead.parked, p)
		}
	}
}

// failParkedFetches answers every parked fetch with NOT_LEADER_OR_FOLLOWER
// when leadership ends, so fetchers retry at once.
func (n *Node) failParkedFetches() {
	for _, p := range n.lead.parked {
		resp, _ := n.fetchResponse(p.in.Request.GetVersion(), errNotLeaderOrFollower, -1)
		n.respond(p.in, resp)
	}
	n.lead.parked = nil
}

type parkedFetch struct {
	in       Message
	original *kmsg.FetchResponse
	offset   int64
	deadline int64
}
