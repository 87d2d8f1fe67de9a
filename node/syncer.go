package node

// The leader's fsync runs beside the node loop (quorum.Ready.SendFirst):
// while it runs, the loop keeps taking fetches, so followers that synced
// first can commit the records without waiting for the leader's disk, and
// the slowest of three fsyncs no longer sets the pace of a commit.

// SyncJob asks for the log to be durable below End, for the leader of Epoch.
type SyncJob struct {
	Epoch int32
	End   int64
}

// deferredSyncs is the loop's side of the Syncer: whether a job is out, and
// the newest one asked for meanwhile, which one fsync then covers.
type deferredSyncs struct {
	running bool
	next    *SyncJob
}

// start hands job to the syncer, or keeps it for when the syncer is free.
func (d *deferredSyncs) start(n *Node, job SyncJob) {
	if d.running {
		d.next = &job
		return
	}
	d.running = true
	n.env.Syncer.Start(job)
}

// join waits for the syncer before the loop persists anything else itself
// (a snapshot, an fsync of its own): the log is never changed under a
// running fsync but by appends. The report is dropped: the loop's own
// fsync, which follows, covers its records.
func (d *deferredSyncs) join(n *Node) error {
	if !d.running {
		return nil
	}
	d.running, d.next = false, nil
	return n.env.Syncer.Wait()
}

// Synced reports a finished deferred fsync to the core and starts the next
// one. An error is fatal.
func (n *Node) Synced(job SyncJob, err error) {
	n.sync.running = false
	if err != nil {
		if n.fatal == nil {
			n.fatal = err
		}
		return
	}
	n.core.LeaderSynced(job.Epoch, job.End)
	if next := n.sync.next; next != nil {
		n.sync.next = nil
		n.sync.start(n, *next)
	}
}

// BackgroundSyncer is production's Syncer: one goroutine runs sync for each
// job, one job at a time, and delivers the results on Results, which the
// driver passes to Node.Synced.
type BackgroundSyncer struct {
	sync    func() error
	jobs    chan SyncJob
	results chan syncResult
	stop    chan struct{}
}

type syncResult struct {
	job SyncJob
	err error
}

// NewSyncer starts the goroutine that runs sync for each job until Close.
func NewSyncer(sync func() error) *BackgroundSyncer {
	s := &BackgroundSyncer{sync: sync, jobs: make(chan SyncJob, 1), results: make(chan syncResult, 1), stop: make(chan struct{})}
	go func() {
		for {
			select {
			case job := <-s.jobs:
				s.results <- syncResult{job: job, err: s.sync()}
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

// Start implements Syncer.
func (s *BackgroundSyncer) Start(job SyncJob) { s.jobs <- job }

// Wait implements Syncer; only call it with a job out.
func (s *BackgroundSyncer) Wait() error { return (<-s.results).err }

// Results delivers the finished jobs; the driver passes each to Node.Synced.
func (s *BackgroundSyncer) Results() <-chan syncResult { return s.results }

// Close stops the goroutine; no job may be out.
func (s *BackgroundSyncer) Close() { close(s.stop) }
