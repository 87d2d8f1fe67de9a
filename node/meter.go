package node

import (
	"time"

	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage/batch"
)

// Meter is told what the loop measured, for the process's metrics
// (package metrics implements it). The simulator and most tests leave it
// nil: nothing is measured. Calls come from the loop goroutine, Fsynced
// also from the leader's syncer goroutine; none may block or call back
// into the Node.
type Meter interface {
	// Committed: a batch the leader appended committed, latency after it
	// was written (Apache's commit-latency).
	Committed(latency time.Duration)
	// Appended: records were written at the log end, by this node as
	// leader (Apache's append-records) or fetched from the leader
	// (fetch-records).
	Appended(records int, asLeader bool)
	// Fsynced: one fsync of the log took d.
	Fsynced(d time.Duration)
	// Elected: an election this node stood in or waited on ended with a
	// known leader, d after it began (Apache's election-latency).
	Elected(d time.Duration)
	// Replayed: the state machine holds every record up to lastOffset,
	// the last of which was appended at appendTimeMs (-1 if unknown).
	Replayed(lastOffset, appendTimeMs int64)
	// ReplayFailed: the image rejected a committed record (Apache's
	// MetadataErrorCount).
	ReplayFailed()
	// Activated: this node became the active controller of an epoch.
	Activated()
	// Idled: the production loop (Runner) waited d for its next event
	// (Apache's poll-idle-ratio measures the same wait).
	Idled(d time.Duration)
	// SnapshotLoaded: the state machine took a snapshot (the newest one at
	// start, or one installed from the leader).
	SnapshotLoaded()
	// SnapshotWritten: this node wrote a snapshot of bytes at at; called
	// from the goroutine that writes it.
	SnapshotWritten(bytes int64, at time.Time)
}

// countRecords is how many records the whole batches in raw hold.
func countRecords(raw []byte) int {
	total := 0
	batch.Walk(raw, func(h batch.Header, _ []byte) error {
		total += int(h.RecordCount)
		return nil
	})
	return total
}

// timedSync runs sync and tells the meter how long it took.
func timedSync(m Meter, clock Clock, sync func() error) error {
	if m == nil {
		return sync()
	}
	start := clock.Now()
	err := sync()
	m.Fsynced(clock.Now().Sub(start))
	return err
}

// noteElection keeps the time an election began (the node became
// prospective or candidate, or lost its leader), and tells the meter how
// long it took once a leader is known again, as Apache's election-latency
// measures from the start of an election to its end.
func (n *Node) noteElection(prev, s quorum.SoftState) {
	now := n.env.Clock.Now()
	switch {
	case s.LeaderID < 0 && n.electionStart.IsZero():
		n.electionStart = now
	case s.LeaderID >= 0 && !n.electionStart.IsZero():
		if n.env.Meter != nil {
			n.env.Meter.Elected(now.Sub(n.electionStart))
		}
		n.electionStart = time.Time{}
	}
	if n.env.Meter != nil && s.Role == quorum.RoleLeader && s.EpochCommitted && !(prev.Role == quorum.RoleLeader && prev.EpochCommitted && prev.Epoch == s.Epoch) {
		n.env.Meter.Activated()
	}
}

// appendStamp is one leader append awaiting its commit (Node.appends).
type appendStamp struct {
	end int64 // the log end after the append
	at  time.Time
}

// meterCommits tells the meter how long each leader append the high
// watermark now covers took to commit; a node that is no longer leader
// forgets its appends.
func (n *Node) meterCommits() {
	if len(n.appends) == 0 {
		return
	}
	if n.soft.Role != quorum.RoleLeader {
		n.appends = n.appends[:0]
		return
	}
	now, i := n.env.Clock.Now(), 0
	for ; i < len(n.appends) && n.appends[i].end <= n.hw; i++ {
		n.env.Meter.Committed(now.Sub(n.appends[i].at))
	}
	n.appends = append(n.appends[:0], n.appends[i:]...)
}
