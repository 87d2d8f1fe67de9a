package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node/nodetest"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage/batch"
)

// reconfigWork, in a dynamic quorum, asks a leader now and then to add a
// node that is not a voter (an observer, or a voter removed before) or to
// remove a voter (itself too), as kafka-metadata-quorum add-controller and
// remove-controller do. The answers are counted, never required: a change
// may be refused, time out or lose its leader.
func (s *Sim) reconfigWork() {
	if !s.faults.Dynamic || s.rand.Float64() >= s.faults.ReconfigProb {
		return
	}
	for _, n := range s.nodes {
		if !n.up {
			continue
		}
		st := n.node.Status()
		if st.Role != quorum.RoleLeader || !st.EpochCommitted {
			continue
		}
		var outside []int32
		for _, id := range s.ids {
			if _, ok := st.Voters.Get(id); !ok {
				outside = append(outside, id)
			}
		}
		var req kmsg.Request
		if len(outside) > 0 && (len(st.Voters) == 1 || s.rand.IntN(2) == 0) {
			id := outside[s.rand.IntN(len(outside))]
			add := kmsg.NewPtrAddRaftVoterRequest()
			add.Version, add.VoterID, add.VoterDirectoryID = 1, id, nodetest.DirectoryID(id)
			add.AckWhenCommitted = s.rand.IntN(2) == 0
			e := endpoint(id)
			add.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: e.Name, Host: e.Host, Port: e.Port}}
			req = add
			s.event("n%d asked to add voter %d", n.id, id)
		} else if canShrink(len(st.Voters)) {
			v := st.Voters[s.rand.IntN(len(st.Voters))]
			remove := kmsg.NewPtrRemoveRaftVoterRequest()
			remove.VoterID, remove.VoterDirectoryID = v.ID, v.DirectoryID
			req = remove
			s.event("n%d asked to remove voter %d", n.id, v.ID)
		} else {
			return
		}
		s.stats.VoterChanges++
		n.node.Inbound(req, func(resp kmsg.Response) {
			if code := voterChangeCode(resp); code == 0 {
				s.stats.VoterChangesOK++
			} else {
				s.event("n%d voter change answered %d", n.id, code)
			}
		})
		return
	}
}

func voterChangeCode(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.AddRaftVoterResponse:
		return r.ErrorCode
	case *kmsg.RemoveRaftVoterResponse:
		return r.ErrorCode
	}
	return -1 // the node stopped first
}

// oneUncommittedVoterChange checks that a leader's log holds at most one
// VotersRecord of its own epoch above its high watermark: Apache's rule of
// one uncommitted voter change at a time, on which single-server changes
// are safe. (Records of earlier epochs above it are its predecessors', which
// it commits or not with its first record.)
func oneUncommittedVoterChange(n *simNode, st quorum.Status) error {
	if st.Role != quorum.RoleLeader {
		return nil
	}
	log := n.disk.Log
	var offsets []int64
	votersType := (&metadata.VotersRecord{}).ControlType()
	for next := max(st.HighWatermark, log.StartOffset()); next < log.EndOffset(); {
		raw, err := log.Read(next, 1<<20)
		if err != nil {
			return fmt.Errorf("n%d: reading its log at %d: %w", n.id, next, err)
		}
		before := next
		_, err = batch.Walk(raw, func(h batch.Header, one []byte) error {
			next = h.NextOffset()
			if !h.IsControl() || h.PartitionLeaderEpoch != st.Epoch {
				return nil
			}
			b, err := batch.Decode(one)
			if err != nil {
				return err
			}
			for _, r := range b.Records {
				if off := b.BaseOffset + int64(r.OffsetDelta); off >= st.HighWatermark && quorum.ControlType(r.Key) == votersType {
					offsets = append(offsets, off)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("n%d: reading its log at %d: %w", n.id, before, err)
		}
		if next == before {
			break
		}
	}
	if len(offsets) > 1 {
		return fmt.Errorf("n%d leads epoch %d with %d uncommitted voter changes at %v (high watermark %d)", n.id, st.Epoch, len(offsets), offsets, st.HighWatermark)
	}
	return nil
}

// canShrink reports whether the simulator may remove a voter from a set of
// the given size: never from two (seeds 440 and 2096 found why). The voter
// set takes a VotersRecord as appended, committed or not (as Apache's
// does). Say voters {1, 2}: leader 1 appends the set {1} (removing 2; or
// {2}, removing itself), the other voter fetches it, and the leader dies
// before its own copy is durable (the leader ships records while it fsyncs
// them). Then the node that has the record is outside its newest set: it
// neither stands nor, its log being longer, grants the other a vote, and the
// other needs that vote under the old set. No leader is elected again.
// Raft's single-server changes share the hole, and by reading Apache's
// does too; closing it needs a node outside its newest set to stand under
// the last committed one.
func canShrink(voters int) bool { return voters > 2 }
