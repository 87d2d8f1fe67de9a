package node

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
)

// Process runs the Ready loop until the core has nothing left: persist
// (fsync), send, Advance; then apply what committed, and hand the
// controller's new proposals to the core (seam.go). A leader's Ready may be
// sent first, so that followers write and fsync the records while the
// leader does. Applying last keeps replay off the path of the next Fetch or
// fetch answer, and anything apply proposes (activation records) reaches
// the core after Advance, never between Ready and Advance. An error is
// fatal: the node must stop (and the process exit).
func (n *Node) Process() error {
	for n.fatal == nil && n.core.HasReady() {
		for n.fatal == nil && n.core.HasReady() {
			if err := n.handleReady(n.core.Ready()); err != nil {
				n.fatal = err
			}
		}
		if n.fatal == nil {
			if err := n.applyCommitted(); err != nil {
				n.fatal = err
			}
		}
		if n.fatal == nil && n.seam != nil {
			// What the controller made of the commits goes to the core
			// in this same pass.
			n.seam.flush()
		}
	}
	if n.fatal != nil {
		n.log.Error().Err(n.fatal).Msg("quorum loop stopped")
		n.failAll(n.fatal)
	}
	return n.fatal
}

func (n *Node) handleReady(rd quorum.Ready) error {
	deferSync := rd.SendFirst && rd.MustSync
	if !deferSync && (rd.MustSync || rd.SnapshotWrite != nil) {
		if err := n.sync.join(n); err != nil {
			return err
		}
	}
	if rd.SendFirst {
		n.sendAll(rd.Messages)
	}
	hs := rd.HardState
	if n.cfg.Broken.SendBeforeHardState {
		rd.HardState = nil // written below, after the messages left
	}
	if err := n.persist(rd, !deferSync); err != nil {
		return err
	}
	if !rd.SendFirst {
		n.sendAll(rd.Messages)
	}
	if n.cfg.Broken.SendBeforeHardState && hs != nil {
		if err := n.persist(quorum.Ready{HardState: hs}, false); err != nil {
			return err
		}
	}
	// The messages left only now, after the fsync: what Advance starts
	// timing (a follower's wait for its leader) starts from here.
	n.core.SetTime(n.nowMs())
	switch {
	case deferSync && n.cfg.Broken.CountUnsyncedLeaderCopy:
		n.core.Advance()
	case deferSync:
		n.core.AdvanceWritten()
		n.sync.start(n, SyncJob{Epoch: rd.SoftState.Epoch, End: n.disk.Log.EndOffset()})
	default:
		n.core.Advance()
	}
	if rd.SoftState != n.soft {
		n.onSoftState(rd.SoftState)
	}
	n.hw = max(n.hw, rd.HighWatermark)
	n.meterCommits()
	n.publishStatus()
	return nil
}

// persist writes what rd asks for; it fsyncs when rd.MustSync and sync.
func (n *Node) persist(rd quorum.Ready, sync bool) error {
	obs := n.env.Observer
	if rd.HardState != nil {
		st := n.core.Status()
		if err := n.disk.WriteHardState(*rd.HardState, st.KRaftVersion, st.Voters.IDs()); err != nil {
			return err
		}
		if obs != nil {
			obs.HardStateWritten(*rd.HardState)
		}
	}
	if c := rd.SnapshotWrite; c != nil {
		if err := n.writeSnapshotChunk(c); err != nil {
			return err
		}
	}
	if rd.Truncate != nil {
		if err := n.disk.Log.TruncateTo(*rd.Truncate); err != nil {
			return err
		}
		if obs != nil {
			obs.Truncated(*rd.Truncate)
		}
	}
	if len(rd.Append) > 0 {
		if err := n.disk.Log.Append(rd.Append); err != nil {
			return err
		}
		if m := n.env.Meter; m != nil {
			asLeader := n.soft.Role == quorum.RoleLeader
			m.Appended(countRecords(rd.Append), asLeader)
			if asLeader {
				n.appends = append(n.appends, appendStamp{end: n.disk.Log.EndOffset(), at: n.env.Clock.Now()})
			}
		}
		if obs != nil {
			obs.Appended(rd.Append)
		}
	}
	if rd.MustSync && sync {
		return timedSync(n.env.Meter, n.env.Clock, n.disk.Log.Sync)
	}
	return nil
}

// writeSnapshotChunk stores a piece of a snapshot fetched from the leader;
// the last piece freezes it (fsync, rename) and the log restarts after it.
func (n *Node) writeSnapshotChunk(c *quorum.SnapshotChunk) error {
	id := storage.SnapshotID{EndOffset: c.ID.EndOffset, Epoch: c.ID.Epoch}
	if c.Position == 0 || n.snapshotSink == nil {
		if n.snapshotSink != nil {
			n.snapshotSink.Abort()
		}
		w, err := n.disk.Log.CreateSnapshot(id)
		if err != nil {
			return err
		}
		n.snapshotSink = w
	}
	if err := n.snapshotSink.Write(c.Data); err != nil {
		return err
	}
	if !c.Done {
		return nil
	}
	w := n.snapshotSink
	n.snapshotSink = nil
	if err := w.Freeze(); err != nil {
		return err
	}
	if err := n.disk.Log.ResetTo(id.EndOffset); err != nil {
		return err
	}
	im, _, err := n.disk.LoadSnapshot(id)
	if err != nil {
		return err
	}
	n.log.Info().Str("snapshot", id.String()).Msg("installed snapshot from the leader")
	n.sm.LoadSnapshot(id.EndOffset-1, im)
	if m := n.env.Meter; m != nil {
		m.SnapshotLoaded()
	}
	if obs := n.env.Observer; obs != nil {
		obs.SnapshotInstalled(c.ID)
		obs.Replayed(id.EndOffset)
	}
	return nil
}

func (n *Node) sendAll(msgs []quorum.Message) {
	for _, m := range msgs {
		if m.Response != nil {
			if w, ok := n.waiters[m.ReqID]; ok {
				delete(n.waiters, m.ReqID)
				w.reply(n.snapshotAnswer(m, w.stream))
			}
			continue
		}
		if req, ok := m.Request.(*kmsg.EndQuorumEpochRequest); ok {
			n.noteEndQuorum(m.To, req)
		}
		if book, ok := n.env.Transport.(Endpoints); ok && m.Endpoint != nil {
			// A node outside the voter set (one being added): say where
			// it listens first.
			book.SetEndpoints(m.To, []quorum.Endpoint{*m.Endpoint})
		}
		n.env.Transport.Send(m.To, m.ReqID, m.Request)
	}
}

// applyCommitted replays newly committed records into the state machine,
// answers proposals that committed, and lets a new leader write its
// activation records.
func (n *Node) applyCommitted() error {
	upTo := n.hw
	if n.cfg.Broken.ReplayPastHighWatermark {
		upTo = n.disk.Log.EndOffset()
	}
	if upTo > n.sm.Applied()+1 {
		if err := n.replayTo(upTo); err != nil {
			return err
		}
		urgency := Idle
		if n.soft.Role == quorum.RoleLeader {
			urgency = Yielding
		}
		n.snapshots.MaybeSnapshot(n.hw, urgency)
	}
	if !n.caughtUpOnce && n.hw >= 0 && n.sm.Applied()+1 >= n.hw {
		n.caughtUpOnce = true
		close(n.caughtUp)
	}
	n.completeCommitWaits()
	n.maybeActivate()
	return nil
}

// replayTo applies every record below end that the image has not seen.
func (n *Node) replayTo(end int64) error {
	from := max(n.sm.Applied()+1, n.disk.Log.StartOffset())
	appendTimeMs := int64(-1)
	reached, err := walkLog(n.disk.Log, from, end, false, func(h batch.Header) { appendTimeMs = h.MaxTimestamp },
		func(offset int64, rec metadata.Record, _ batch.Record) error {
			if rec == nil {
				return nil // control records shape the quorum, not the image
			}
			if err := n.sm.Replay(offset, rec); err != nil {
				n.log.Warn().Err(err).Msg("skipping a record the image rejects")
				if m := n.env.Meter; m != nil {
					m.ReplayFailed()
				}
			}
			return nil
		})
	n.sm.MarkApplied(reached - 1)
	if m := n.env.Meter; m != nil {
		m.Replayed(reached-1, appendTimeMs)
	}
	if obs := n.env.Observer; obs != nil {
		obs.Replayed(reached)
	}
	return err
}

func (n *Node) onSoftState(s quorum.SoftState) {
	prev := n.soft
	n.soft = s
	n.logTransition(prev, s)
	n.noteElection(prev, s)
	if prev.Role == quorum.RoleLeader && (s.Role != quorum.RoleLeader || s.Epoch != prev.Epoch) {
		for _, w := range n.commitWaits {
			w.done(w.first, ErrNotController)
		}
		n.commitWaits = nil
	}
	if s.Role != quorum.RoleLeader {
		n.failHeld(ErrNotController)
	}
	if n.seam != nil {
		// After the failures above, so that the controller answers what
		// was in flight in log order before what was queued behind it.
		n.seam.observe()
	}
}

func (n *Node) completeCommitWaits() {
	committed := n.hw
	if n.cfg.Broken.AckBeforeCommit {
		committed = n.disk.Log.EndOffset()
	}
	i := 0
	for ; i < len(n.commitWaits); i++ {
		w := n.commitWaits[i]
		if w.last >= committed {
			break
		}
		w.done(w.first, nil)
	}
	n.commitWaits = n.commitWaits[i:]
}

// maybeActivate makes a new leader write its activation records once it has
// replayed every record committed before its epoch: that is known only once
// a record of its own epoch commits (the high watermark alone may still be
// an earlier epoch's, below records the previous leader wrote, such as its
// own bootstrap records, which would then be written twice).
func (n *Node) maybeActivate() {
	if n.soft.Role != quorum.RoleLeader || n.activated == n.soft.Epoch || !n.soft.EpochCommitted {
		return
	}
	n.activated = n.soft.Epoch
	if recs := n.sm.ActivationRecords(); len(recs) > 0 {
		n.log.Info().Int("records", len(recs)).Msg("writing bootstrap records into the empty metadata log")
		n.Propose(&Proposal{Records: recs, Done: func(int64, error) {}})
	}
	held := n.held
	n.held = nil
	for _, p := range held {
		n.Propose(p)
	}
}
