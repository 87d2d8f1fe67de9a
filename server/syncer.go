package server

// The leader's fsync runs beside the node loop (quorum.Ready.SendFirst):
// while it runs, the loop keeps taking fetches, so followers that synced
// first can commit the records without waiting for the leader's disk, and
// the slowest of three fsyncs no longer sets the pace of a commit.

// syncJob asks for the log to be durable below end, for the leader of epoch.
type syncJob struct {
	epoch int32
	end   int64
}

type syncResult struct {
	job syncJob
	err error
}

// runSyncer fsyncs the log for each job, one at a time, until the node stops.
func (n *Node) runSyncer() {
	for {
		select {
		case job := <-n.syncReqs:
			n.syncResults <- syncResult{job: job, err: n.disk.Log.Sync()}
		case <-n.done:
			return
		}
	}
}

// deferSync hands job to the syncer, or keeps it for when the syncer is
// free: one fsync then covers every job asked for meanwhile.
func (n *Node) deferSync(job syncJob) {
	if n.syncing {
		n.syncNext = &job
		return
	}
	n.syncing = true
	n.syncReqs <- job
}

// onSynced reports a finished fsync to the core and starts the next one.
func (n *Node) onSynced(r syncResult) {
	n.syncing = false
	if r.err != nil {
		n.err = r.err
		return
	}
	n.core.LeaderSynced(r.job.epoch, r.job.end)
	if next := n.syncNext; next != nil {
		n.syncNext = nil
		n.deferSync(*next)
	}
}

// joinSync waits for the syncer to finish before the loop persists anything
// else itself (a HardState, a truncation, a snapshot, an fsync of its own):
// the log is never changed under a running fsync but by appends. Reports
// are dropped: the loop's own fsync, which follows, covers their records.
func (n *Node) joinSync() error {
	if !n.syncing {
		return nil
	}
	r := <-n.syncResults
	n.syncing, n.syncNext = false, nil
	return r.err
}
