package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/node/nodetest"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage"
)

const metaDir = "/meta"

// simNode is one simulated controller: its disk, and while it is up the
// production runtime and controller running on it.
type simNode struct {
	s     *Sim
	id    int32
	voter bool
	// changesAsked counts the voter changes this incarnation was asked and
	// has not answered (mayReformat); a crash drops them unanswered.
	changesAsked int
	// formats counts the times its disk was replaced and formatted again
	// (a new directory id each time, reformat).
	formats int
	fs      *storage.MemFS
	disk    *node.Disk
	node    *node.Node
	ctl     *controller.Controller
	seam    *node.Seam // drives ctl's core on the node's loop
	up      bool
	// nextRegistration is when the controller next looks whether it must
	// register with the leader (registerController).
	nextRegistration int64
	incarn           uint64
	// open are the requests this incarnation was handed and has not
	// answered (a parked Fetch): a crash that closes its connections fails
	// them at their senders.
	open []quorum.Message

	// The leader's deferred fsync, while one is out (the node's Syncer).
	syncJob *node.SyncJob
	syncDue int64
	// pausedUntil: the node stops stepping until then (silent.go);
	// clockSkew and clockLast make its clock (nodeClock).
	pausedUntil          int64
	clockSkew, clockLast int64

	view nodeView // the checker's picture of this node
}

// format writes what `kraftd format` writes for a static quorum, or for a
// dynamic one of the initial voters.
func (s *Sim) format(n *simNode) {
	var err error
	if s.faults.Dynamic {
		err = nodetest.FormatDynamicAs(n.fs, metaDir, simClusterID, n.id, n.dir(), nil, s.voters)
	} else {
		err = nodetest.Format(n.fs, metaDir, simClusterID, n.id, nil)
	}
	if err != nil {
		panic(err) // a fresh MemFS always takes it
	}
}

// dir is the node's directory id, as its disk was last formatted.
func (n *simNode) dir() [16]byte { return nodetest.ReformattedDirectoryID(n.id, n.formats) }

// endpoint is node id's controller listener.
func endpoint(id int32) quorum.Endpoint {
	return quorum.Endpoint{Name: "CONTROLLER", Host: "sim", Port: uint16(9000 + id)}
}

// start opens the node's directory and runs a new incarnation on it.
func (s *Sim) start(n *simNode) error {
	n.incarn++
	disk, err := node.OpenDisk(n.fs, node.DiskConfig{Dir: metaDir, NodeID: n.id, SegmentBytes: s.faults.SegmentBytes, IndexBytes: 64 << 10}, zerolog.Nop())
	if err != nil {
		return fmt.Errorf("n%d cannot open its directory after a crash: %w", n.id, err)
	}
	if s.opts.ForgetVoteOnRestart && n.incarn > 1 {
		disk.HardState.VotedID, disk.HardState.VotedDirectoryID = -1, [16]byte{}
	}
	n.disk = disk
	n.ctl = controller.New(n.id, disk.Bootstrap)
	static := s.voters
	if s.faults.Dynamic {
		static = nil // the core reads the voter set from the disk
	}
	cfg := node.Config{
		NodeID:           n.id,
		Voters:           static,
		Endpoints:        []quorum.Endpoint{endpoint(n.id)},
		RequestTimeoutMs: 800,
		SilenceTimeoutMs: silenceIf(s.faults.Silent.Silence, simSilenceMs),
		FetchMaxWaitMs:   int32(silenceIf(s.faults.Silent.Silence, simFetchMaxWaitMs)),
		AutoJoin:         s.faults.AutoJoin,
		Snapshots:        node.SnapshotPolicy{MaxBytes: s.faults.SnapshotBytes, RetentionBytes: s.faults.RetentionBytes, RetentionMs: -1, Gzip: s.faults.GzipSnapshots},
		Broken:           s.opts.Broken,
	}
	env := node.Env{
		Transport:  transport{n},
		Clock:      clock{n},
		Syncer:     syncer{n},
		Background: nodetest.RunNow,
		Rand:       rand.New(rand.NewPCG(s.opts.Seed, uint64(n.id)<<32|n.incarn)),
		Observer:   observer{n},
	}
	n.syncJob = nil
	if err := s.check.restarting(n); err != nil {
		return err
	}
	n.node, err = node.New(cfg, disk, n.ctl, env, zerolog.Nop())
	if err != nil {
		return fmt.Errorf("n%d cannot start: %w", n.id, err)
	}
	n.up = true
	s.startController(n)
	return s.check.started(n)
}

// crash stops the node where it is: the disk keeps what a power loss
// would leave.
func (s *Sim) crash(n *simNode) {
	n.up = false
	// A process that dies on a live host has its connections closed by the
	// kernel: each peer waiting on one hears at once. A machine that
	// vanishes tells nobody. UnreachableProb picks between the two.
	if s.rand.Float64() < s.faults.UnreachableProb {
		for _, m := range n.open {
			s.net.push(s.now+s.net.delay(), quorum.Message{From: n.id, To: m.From, ReqID: m.ReqID, Err: quorum.ErrPeerGone})
		}
	}
	n.open, n.changesAsked = nil, 0
	n.node, n.ctl, n.seam, n.disk, n.syncJob = nil, nil, nil, nil, nil
	n.fs = n.fs.Crash(s.rand)
	s.event("n%d crashed", n.id)
	s.stats.Crashes++
}

// inbound steps a request from a peer; the answer goes back over the
// network under the sender's request id.
func (n *simNode) inbound(m quorum.Message) {
	s := n.s
	incarn := n.incarn
	if req, ok := m.Request.(*kmsg.ApiVersionsRequest); ok {
		// The server answers ApiVersions, not the node.
		s.net.send(s.now, quorum.Message{From: n.id, To: m.From, ReqID: m.ReqID, Response: nodetest.ApiVersionsResponse(req)})
		return
	}
	n.open = append(n.open, m)
	n.node.Inbound(m.Request, func(resp kmsg.Response) {
		if resp == nil || !n.up || n.incarn != incarn {
			return
		}
		if i := slices.IndexFunc(n.open, func(o quorum.Message) bool { return o.From == m.From && o.ReqID == m.ReqID }); i >= 0 {
			n.open = slices.Delete(n.open, i, i+1)
		}
		s.check.answered(n, m.Request, resp)
		s.net.send(s.now, quorum.Message{From: n.id, To: m.From, ReqID: m.ReqID, Response: resp})
	})
}

// finishDueSync completes the leader's deferred fsync once it is due.
func (n *simNode) finishDueSync() {
	if n.syncJob == nil || n.syncDue > n.s.now {
		return
	}
	job := *n.syncJob
	n.syncJob = nil
	n.node.Synced(job, n.disk.Log.Sync())
}

// workload proposes records on leaders: cluster-level configs, which every
// image applies.
func (s *Sim) workload() {
	for _, n := range s.nodes {
		if !n.running() {
			continue
		}
		st := n.node.Status()
		if st.Role != quorum.RoleLeader || s.rand.Float64() >= s.faults.ProposeProb {
			continue
		}
		var recs []metadata.Record
		for range 1 + s.rand.IntN(3) {
			s.record++
			v := fmt.Sprintf("v%d", s.record)
			// Broker configs of 20 broker ids, 4 keys each: images stay small.
			recs = append(recs, &metadata.ConfigRecord{ResourceType: 4, ResourceName: fmt.Sprint(s.record % 20), Name: fmt.Sprintf("k%d", s.record%4), Value: &v})
		}
		p := &node.Proposal{Records: recs, Epoch: st.Epoch}
		p.Done = func(first int64, err error) {
			if err == nil {
				s.check.acked(n, first, recs)
			}
		}
		n.node.Propose(p)
	}
}

// transport is a node's peer client: requests go onto the network.
type transport struct{ n *simNode }

func (t transport) Send(to int32, reqID uint64, req kmsg.Request) {
	t.n.s.sendRequest(t.n, to, reqID, req)
}

// MaxVersion makes the seed's old peer, and its partners, speak the
// versions of a peer that has no pre-vote.
func (t transport) MaxVersion(peer int32, key int16) (int16, bool) {
	old := t.n.s.faults.OldPeer
	if peer != old && t.n.id != old {
		return 0, false
	}
	switch key {
	case 52: // Vote without PreVote
		return 1, true
	case 1:
		return 16, true
	case 53, 54, 59:
		return 0, true
	}
	return 0, false
}

type clock struct{ n *simNode }

func (c clock) Now() time.Time { return time.UnixMilli(c.n.clockMs()) }

// syncer defers the leader's fsync for some steps, or runs it at once.
type syncer struct{ n *simNode }

func (y syncer) Start(job node.SyncJob) {
	s := y.n.s
	y.n.syncJob = &job
	y.n.syncDue = s.now
	if s.rand.Float64() < s.faults.DeferSyncProb {
		y.n.syncDue += s.syncDelay()
	}
}

func (y syncer) Wait() error {
	y.n.syncJob = nil
	return y.n.disk.Log.Sync()
}

// observer feeds what a node's loop did to the checker.
type observer struct{ n *simNode }

func (o observer) check(err error) {
	if err != nil {
		o.n.s.check.fail(err)
	}
}

func (o observer) HardStateWritten(hs quorum.HardState) { o.check(o.n.s.check.hardState(o.n, hs)) }

func (o observer) Truncated(to int64) {
	o.n.s.stats.Truncations++
	o.n.s.event("n%d truncated to %d", o.n.id, to)
	o.check(o.n.s.check.truncating(o.n, to))
}

func (o observer) Appended(batches []byte) { o.check(o.n.s.check.appended(o.n, batches)) }

func (o observer) SnapshotInstalled(id quorum.SnapshotID) {
	o.n.s.stats.Snapshots++
	o.n.s.event("n%d installed snapshot %d@%d", o.n.id, id.EndOffset, id.Epoch)
	o.check(o.n.s.check.installed(o.n, id))
}

func (o observer) Replayed(end int64) { o.check(o.n.s.check.replayed(o.n, end)) }
