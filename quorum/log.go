// log.go owns the log end as it will be once pending output is applied:
// proposals encoded into batches, batches appended or truncated, and reads of
// the records handed out but not yet durable.

package quorum

import (
	"errors"

	"github.com/kraftd/kraftd/storage/batch"
)

// logSettled reports whether the log end is known without applying pending
// output; requests that carry the log end wait for it.
func (n *Node) logSettled() bool { return n.truncate == nil && n.snapChunk == nil }

func (n *Node) reloadLogEnd() {
	n.endOffset = n.log.EndOffset()
	n.lastEpoch = n.log.LastEpoch()
}

// reloadLogEndWithPending recomputes the log end from the Log plus the
// batches still waiting in appendBuf (proposals were just dropped).
func (n *Node) reloadLogEndWithPending() {
	if !n.logSettled() {
		return
	}
	n.reloadLogEnd()
	_, _ = batch.Walk(n.appendBuf, func(h batch.Header, _ []byte) error {
		n.endOffset = h.NextOffset()
		n.lastEpoch = h.PartitionLeaderEpoch
		return nil
	})
}

// appendBatches queues already-encoded batches after any pending proposals.
func (n *Node) appendBatches(b []byte) {
	n.encodeProposals()
	n.appendBuf = append(n.appendBuf, b...)
	_, _ = batch.Walk(b, func(h batch.Header, _ []byte) error {
		n.endOffset = h.NextOffset()
		n.lastEpoch = h.PartitionLeaderEpoch
		return nil
	})
	if n.lead != nil {
		n.lead.lastAppendMs = n.now
	}
	n.applyAppended(b)
}

// encodeProposals turns queued proposals into data batches of at most
// MaxBatchBytes of values each (a single oversized record gets its own).
func (n *Node) encodeProposals() {
	if len(n.proposals) == 0 {
		return
	}
	base := n.proposalBase
	var recs []batch.Record
	size := 0
	flush := func() {
		if len(recs) > 0 {
			n.appendBuf = batch.Builder{BaseOffset: base, LeaderEpoch: n.epoch, Timestamp: n.now}.Encode(n.appendBuf, recs)
			base += int64(len(recs))
			recs, size = nil, 0
		}
	}
	for _, v := range n.proposals {
		if size+len(v) > n.cfg.MaxBatchBytes {
			flush()
		}
		recs = append(recs, batch.Record{Value: v})
		size += len(v)
	}
	flush()
	n.proposals = nil
}

// readPending is Log.Read over batches handed out in a Ready and not yet
// durable: whole batches from the one holding offset, at most maxBytes but
// at least one.
func readPending(buf []byte, offset int64, maxBytes int) []byte {
	pos, start := 0, -1
	end, _ := batch.Walk(buf, func(h batch.Header, raw []byte) error {
		if start < 0 && h.NextOffset() > offset {
			start = pos
		} else if start >= 0 && pos+len(raw)-start > maxBytes {
			return errStopWalk
		}
		pos += len(raw)
		return nil
	})
	if start < 0 {
		return nil
	}
	return buf[start:end]
}

// appendAsFollower takes the whole, CRC-valid batches that continue the log.
//
// It stops at a batch of a later epoch than the node's, its leader's: no
// leader writes one, and the log's last epoch is what a restarted node
// takes as its epoch. It reports false then, and the batches before it
// are kept.
func (n *Node) appendAsFollower(records []byte) bool {
	ok := true
	from := len(n.appendBuf)
	defer func() { n.applyAppended(n.appendBuf[from:]) }()
	_, _ = batch.Walk(records, func(h batch.Header, raw []byte) error {
		if h.BaseOffset != n.endOffset {
			return errStopWalk
		}
		if h.PartitionLeaderEpoch > n.epoch {
			ok = false
			return errStopWalk
		}
		n.appendBuf = append(n.appendBuf, raw...)
		n.endOffset = h.NextOffset()
		n.lastEpoch = h.PartitionLeaderEpoch
		return nil
	})
	return ok
}

var errStopWalk = errors.New("stop")

// truncateToEndOffset is Apache's ReplicatedLog.truncateToEndOffset.
func (n *Node) truncateToEndOffset(offset int64, epoch int32) {
	var to int64
	if epoch == 0 {
		to = min(offset, n.endOffset)
	} else {
		localEnd, localEpoch := n.endOffsetForEpoch(epoch)
		if localEpoch == epoch {
			to = min(localEnd, offset)
		} else {
			to = localEnd
		}
	}
	if to < 0 {
		to = n.log.StartOffset()
	}
	if to >= n.endOffset {
		return
	}
	n.truncate = &to
	n.endOffset = to
	// A voter change the leader did not keep is taken back with it.
	n.control.truncateFrom(to)
	n.refreshVoters()
}

// endOffsetForEpoch is KafkaMetadataLog.endOffsetForEpoch over the Log
// interface. It never answers (-1, -1): when the epoch cache cannot answer,
// it is (LEO, last epoch); and an answer that lands on the earliest
// snapshot's end offset for the requested epoch (an epoch older than the
// log) is replaced by that snapshot's id.
func (n *Node) endOffsetForEpoch(epoch int32) (int64, int32) {
	end, found := n.log.EndOffsetForEpoch(epoch)
	if end < 0 {
		return n.log.EndOffset(), n.log.LastEpoch()
	}
	if earliest, ok := n.log.EarliestSnapshot(); ok && end == earliest.EndOffset && found == epoch {
		return earliest.EndOffset, earliest.Epoch
	}
	return end, found
}
