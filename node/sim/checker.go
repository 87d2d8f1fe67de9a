package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/node/nodetest"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage/batch"
)

// checker holds the global history the invariants are checked against.
//
//   - election safety: at most one leader per epoch;
//   - vote durability: a node grants one vote per epoch, across crashes,
//     and never restarts in an epoch below one it wrote to quorum-state;
//   - log matching: batches ending at the same (offset, epoch) on any two
//     nodes have the same content and the same whole prefix (a hash chain
//     over the batches);
//   - committed data: every high watermark a node reports names one prefix
//     forever; it is never truncated from a node that holds it, and every
//     new leader holds the largest one;
//   - replay: no node replays a record beyond the committed offset, nor
//     truncates a record it replayed, and every node that replayed the log
//     up to offset N holds an image with the same hash;
//   - acknowledgements: a proposal (the simulator's own, or a controller
//     core's write) is answered only once committed, in log order, and
//     every answered proposal's records are in the final leader's log at
//     their offsets;
//   - the cluster: a broker's registrations answer ever larger epochs, no
//     two committed images name different leaders for one leader epoch of a
//     partition, and the admin's topic history is linearizable (history.go);
//   - majorities: every advance of a leader's high watermark is held by a
//     majority of the voter set in force, each voter counted only by the
//     replica (directory) the set names, so a removed voter, or the old
//     replica of one formatted anew, never counts toward it;
//   - monotonicity: epochs never go backward on a node, and a node's high
//     watermark never goes backward within one incarnation.
type checker struct {
	s            *Sim
	leaders      map[int32]int32    // epoch -> leader
	votes        map[[3]int32]int32 // (voter, its formats, epoch) -> candidate granted
	durableEpoch map[int32]int32    // node -> highest epoch in its quorum-state
	registry     map[batchKey]uint64
	committed    map[int64]uint64
	hashes       map[int64][32]byte // replayed end -> image hash
	// partitionLeaders is the leader each committed image named for a
	// partition's leader epoch.
	partitionLeaders map[partitionEpoch]int32
	acks             []ack
	// wiped is what each replica held when its disk was replaced.
	wiped        map[replicaKey]map[int64]heldBatch
	maxHW        int64
	maxHWChain   uint64
	livenessFrom int64
	// hwByEpoch is the highest high watermark reported in each epoch.
	hwByEpoch map[int32]int64
	// settledEpoch is, in a healthy run, the epoch every voter first
	// followed one leader in (checkSpurious), 0 before.
	settledEpoch int32
}

type partitionEpoch struct {
	topic [16]byte
	epoch int32
}

type replicaKey struct {
	id  int32
	dir [16]byte
}

type batchKey struct {
	next  int64
	epoch int32
}

type ack struct {
	node   int32
	first  int64
	values [][]byte
}

// nodeView is the checker's picture of one node's disk and image.
type nodeView struct {
	held   map[int64]heldBatch // by the offset after the batch
	lastHW int64               // this incarnation
	// backedHW is the highest high watermark commitBacked checked as
	// leader, this incarnation.
	backedHW int64
	applied  int64 // the image holds every record below this
	role     quorum.Role
	epoch    int32
	lastAck  int64
	// voters is the voter set the node last acted on, and votersOffset
	// the offset of its VotersRecord (-1: static), kept while it is down,
	// for the simulator's reformat rule.
	voters       quorum.VoterSet
	votersOffset int64
}

type heldBatch struct {
	epoch int32
	chain uint64
}

func newChecker(s *Sim) *checker {
	return &checker{
		s: s, leaders: map[int32]int32{}, votes: map[[3]int32]int32{}, durableEpoch: map[int32]int32{},
		registry: map[batchKey]uint64{}, committed: map[int64]uint64{}, hashes: map[int64][32]byte{}, maxHW: -1,
		partitionLeaders: map[partitionEpoch]int32{}, wiped: map[replicaKey]map[int64]heldBatch{}, hwByEpoch: map[int32]int64{},
	}
}

func chain(prev uint64, raw []byte) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], prev)
	h.Write(b[:])
	h.Write(raw)
	return h.Sum64()
}

// chainAt is the node's chain value just below offset, if offset is a
// batch boundary of what it holds.
func (c *checker) chainAt(n *simNode, offset int64) (uint64, bool) {
	if offset == 0 {
		return 0, true
	}
	b, ok := n.view.held[offset]
	return b.chain, ok
}

// holds reports whether the node's log (or the snapshot below it) contains
// the history ending at offset with the given chain value.
func (c *checker) holds(n *simNode, offset int64, want uint64) bool {
	if offset < n.disk.Log.StartOffset() {
		return true // below a snapshot, checked when it was written
	}
	ch, ok := c.chainAt(n, offset)
	return ok && ch == want
}

// appended extends the node's chain with whole batches written at its end.
func (c *checker) appended(n *simNode, raw []byte) error {
	_, err := batch.Walk(raw, func(h batch.Header, one []byte) error {
		prev, ok := c.chainAt(n, h.BaseOffset)
		if !ok {
			return fmt.Errorf("n%d appended at %d, where it holds no batch boundary", n.id, h.BaseOffset)
		}
		ch := chain(prev, one)
		n.view.held[h.NextOffset()] = heldBatch{h.PartitionLeaderEpoch, ch}
		key := batchKey{h.NextOffset(), h.PartitionLeaderEpoch}
		if old, ok := c.registry[key]; ok && old != ch {
			return fmt.Errorf("log matching violated: n%d holds a different history ending at offset %d epoch %d", n.id, key.next, key.epoch)
		}
		c.registry[key] = ch
		return nil
	})
	return err
}

// restarting rebuilds the node's picture from what its disk kept: a crash
// may have cut the tail anywhere, or undone an unsynced truncation.
func (c *checker) restarting(n *simNode) error {
	if hs := n.disk.HardState; hs.LeaderEpoch < c.durableEpoch[n.id] {
		return fmt.Errorf("n%d quorum-state epoch went back from %d to %d over a crash", n.id, c.durableEpoch[n.id], hs.LeaderEpoch)
	}
	old := n.view.held
	n.view = nodeView{held: map[int64]heldBatch{}, lastHW: -1, backedHW: -1, lastAck: -1}
	log := n.disk.Log
	start := log.StartOffset()
	if id, ok := log.LatestSnapshot(); ok && id.EndOffset >= start {
		n.view.held[id.EndOffset] = heldBatch{id.Epoch, c.registry[batchKey{id.EndOffset, id.Epoch}]}
	}
	if _, ok := n.view.held[start]; !ok {
		// The batch that ended where the log now starts was deleted by
		// retention; what this node held there before still stands. A
		// snapshot that ends there says more, though: it may be one that
		// replaced a divergent log just before the crash.
		if b, ok := old[start]; ok {
			n.view.held[start] = b
		}
	}
	for next := start; next < log.EndOffset(); {
		raw, err := log.Read(next, 1<<20)
		if err != nil {
			return fmt.Errorf("n%d: read its log at %d after a restart: %w", n.id, next, err)
		}
		before := next
		_, err = batch.Walk(raw, func(h batch.Header, one []byte) error {
			if _, ok := n.view.held[h.BaseOffset]; !ok && h.BaseOffset != 0 {
				// The first batch after a compacted prefix: its chain is
				// the one every node registered for it.
				ch, ok := c.registry[batchKey{h.NextOffset(), h.PartitionLeaderEpoch}]
				if !ok {
					return fmt.Errorf("n%d holds batch %d-%d@%d that no node ever wrote", n.id, h.BaseOffset, h.NextOffset(), h.PartitionLeaderEpoch)
				}
				n.view.held[h.NextOffset()] = heldBatch{h.PartitionLeaderEpoch, ch}
			} else if err := c.appended(n, one); err != nil {
				return err
			}
			next = h.NextOffset()
			return nil
		})
		if err != nil {
			return err
		}
		if next == before {
			break
		}
	}
	return nil
}

// reformatted forgets what the node's replaced disk held: the new one
// starts from nothing, under a new directory id.
func (c *checker) reformatted(n *simNode) {
	delete(c.durableEpoch, n.id)
	// The leader may still count what the old replica acknowledged before
	// its disk was wiped: that loss is outside what the quorum can see.
	c.wiped[replicaKey{n.id, nodetest.ReformattedDirectoryID(n.id, n.formats-1)}] = n.view.held
	n.view = nodeView{held: map[int64]heldBatch{}, lastHW: -1, backedHW: -1, lastAck: -1, voters: n.view.voters, votersOffset: n.view.votersOffset}
}

// started checks a node that just came up.
func (c *checker) started(n *simNode) error {
	st := n.node.Status()
	n.view.role, n.view.epoch, n.view.voters, n.view.votersOffset = st.Role, st.Epoch, st.Voters, st.VotersOffset
	n.view.applied = n.ctl.Applied() + 1
	return nil
}

func (c *checker) installed(n *simNode, id quorum.SnapshotID) error {
	ch, ok := c.registry[batchKey{id.EndOffset, id.Epoch}]
	if !ok {
		return fmt.Errorf("n%d installed snapshot %d@%d of a history no log ever held", n.id, id.EndOffset, id.Epoch)
	}
	if id.EndOffset > c.maxHW {
		return fmt.Errorf("n%d installed snapshot %d@%d beyond the committed offset %d", n.id, id.EndOffset, id.Epoch, c.maxHW)
	}
	n.view.held = map[int64]heldBatch{id.EndOffset: {id.Epoch, ch}}
	return nil
}

func (c *checker) truncating(n *simNode, to int64) error {
	if to < n.view.applied {
		return fmt.Errorf("n%d truncates to %d records it replayed into its image (up to %d)", n.id, to, n.view.applied)
	}
	if to < c.maxHW {
		if ch, ok := c.chainAt(n, c.maxHW); ok && ch == c.maxHWChain && c.maxHW >= n.disk.Log.StartOffset() {
			return fmt.Errorf("n%d truncates to %d, below committed offset %d that it holds", n.id, to, c.maxHW)
		}
	}
	for next, b := range n.view.held {
		if next > to {
			if ch, ok := c.committed[next]; ok && ch == b.chain {
				return fmt.Errorf("n%d truncates committed batch ending at %d", n.id, next)
			}
			delete(n.view.held, next)
		}
	}
	return nil
}

func (c *checker) hardState(n *simNode, hs quorum.HardState) error {
	if hs.LeaderEpoch < c.durableEpoch[n.id] {
		return fmt.Errorf("n%d quorum-state epoch went back from %d to %d", n.id, c.durableEpoch[n.id], hs.LeaderEpoch)
	}
	c.durableEpoch[n.id] = hs.LeaderEpoch
	return nil
}

// answered sees every answer a node sends to a request: a granted vote
// binds the voter for its epoch.
func (c *checker) answered(n *simNode, req kmsg.Request, resp kmsg.Response) {
	vr, ok1 := req.(*kmsg.VoteRequest)
	vresp, ok2 := resp.(*kmsg.VoteResponse)
	if !ok1 || !ok2 || len(vr.Topics) != 1 || len(vr.Topics[0].Partitions) != 1 || len(vresp.Topics) != 1 || len(vresp.Topics[0].Partitions) != 1 {
		return
	}
	p, rp := vr.Topics[0].Partitions[0], vresp.Topics[0].Partitions[0]
	if p.PreVote || !rp.VoteGranted {
		return
	}
	// A voter formatted anew is another replica: its votes are its own.
	key := [3]int32{n.id, int32(n.formats), p.CandidateEpoch}
	if prev, ok := c.votes[key]; ok && prev != p.CandidateID {
		c.fail(fmt.Errorf("vote durability violated: n%d granted its vote to %d and then %d in epoch %d", n.id, prev, p.CandidateID, p.CandidateEpoch))
	}
	c.votes[key] = p.CandidateID
}

// replayed checks the node's image once it holds every record below end.
func (c *checker) replayed(n *simNode, end int64) error {
	// The node's own high watermark, learned in this very pass of its loop.
	if err := c.highWatermark(n, n.node.Status().HighWatermark); err != nil {
		return err
	}
	if end > c.maxHW && end > n.view.applied {
		return fmt.Errorf("n%d replayed records up to %d, beyond the committed offset %d", n.id, end, c.maxHW)
	}
	n.view.applied = max(n.view.applied, end)
	if end%4 != 0 {
		// Hashing the image costs more than the rest of a step; a node
		// that diverges stays diverged, so every fourth offset finds it.
		return nil
	}
	h := n.ctl.Hash()
	if prev, ok := c.hashes[end]; ok && prev != h {
		return fmt.Errorf("n%d holds an image at offset %d that differs from another node's there", n.id, end)
	}
	c.hashes[end] = h
	return nil
}

// partitionLeader checks that no two images name different leaders of
// partition 0 of a topic in the same leader epoch.
func (c *checker) partitionLeader(n *simNode, p controller.PartitionState) {
	key := partitionEpoch{p.TopicID, p.LeaderEpoch}
	if prev, ok := c.partitionLeaders[key]; ok && prev != p.Leader {
		c.fail(fmt.Errorf("n%d's image names leader %d for leader epoch %d of a partition that another image led by %d", n.id, p.Leader, p.LeaderEpoch, prev))
	}
	c.partitionLeaders[key] = p.Leader
}

// acked checks a proposal's answer at the node that made it.
func (c *checker) acked(n *simNode, first int64, recs []metadata.Record) {
	hw := n.node.Status().HighWatermark
	last := first + int64(len(recs)) - 1
	switch {
	case last >= hw:
		c.fail(fmt.Errorf("n%d answered a proposal at %d-%d before it committed (high watermark %d)", n.id, first, last, hw))
	case first <= n.view.lastAck:
		c.fail(fmt.Errorf("n%d answered a proposal at %d after one at %d", n.id, first, n.view.lastAck))
	}
	n.view.lastAck = last
	a := ack{node: n.id, first: first}
	for _, r := range recs {
		a.values = append(a.values, metadata.EncodeValue(r))
	}
	c.acks = append(c.acks, a)
}

func (c *checker) fail(err error) {
	c.s.failure = errors.Join(c.s.failure, err)
}

func (c *checker) afterProcess(n *simNode) error {
	if c.s.failure != nil {
		return c.s.failure
	}
	st := n.node.Status()
	if st.Role != n.view.role || st.Epoch != n.view.epoch {
		c.s.event("n%d %s epoch=%d leader=%d hw=%d end=%d", n.id, st.Role, st.Epoch, st.LeaderID, st.HighWatermark, st.EndOffset)
	}
	if st.Epoch < n.view.epoch {
		return fmt.Errorf("n%d epoch went back from %d to %d", n.id, n.view.epoch, st.Epoch)
	}
	if st.Role == quorum.RoleLeader {
		if l, ok := c.leaders[st.Epoch]; ok && l != n.id {
			return fmt.Errorf("election safety violated: n%d and n%d both lead epoch %d", l, n.id, st.Epoch)
		}
		if _, ok := c.leaders[st.Epoch]; !ok {
			c.s.stats.Elections++
		}
		c.leaders[st.Epoch] = n.id
		if need := c.committedBefore(st.Epoch); n.view.role != quorum.RoleLeader && need > 0 && !c.holds(n, need, c.committed[need]) {
			return fmt.Errorf("leader completeness violated: new leader n%d of epoch %d lacks committed offset %d", n.id, st.Epoch, need)
		}
		if err := oneUncommittedVoterChange(n, st); err != nil {
			return err
		}
		if err := c.commitBacked(n, st); err != nil {
			return err
		}
	}
	n.view.role, n.view.epoch, n.view.voters, n.view.votersOffset = st.Role, st.Epoch, st.Voters, st.VotersOffset
	if err := c.checkSpurious(n, st); err != nil {
		return err
	}
	return c.highWatermark(n, st.HighWatermark)
}

// commitBacked checks that a leader's advanced high watermark (past the
// one it had when elected) is held by a majority of its voter set: the one in force after this step or, since a
// VotersRecord appended in the same step changes the set after the advance
// it made, the one before it.
func (c *checker) commitBacked(n *simNode, st quorum.Status) error {
	hw := st.HighWatermark
	if n.view.role != quorum.RoleLeader {
		// What it learned as a follower was committed by the leader
		// before, whose majority may have gone since (a voter formatted
		// anew); only its own advances are this leader's.
		n.view.backedHW = hw
		return nil
	}
	if hw <= n.view.backedHW || hw <= 0 || hw < n.disk.Log.StartOffset() {
		return nil
	}
	n.view.backedHW = hw
	ch, ok := c.chainAt(n, hw)
	if !ok {
		return nil // highWatermark reports it
	}
	for _, set := range []quorum.VoterSet{st.Voters, n.view.voters} {
		if c.majorityHolds(set, hw, ch) {
			return nil
		}
	}
	return fmt.Errorf("n%d, leader of epoch %d, advanced its high watermark to %d, which no majority of voters %v holds", n.id, st.Epoch, hw, st.Voters.IDs())
}

// majorityHolds reports whether a majority of set holds the history ending
// at offset with chain ch. A voter counts only through the replica the set
// names (if that replica's disk was since replaced, by what it held then);
// a node that is down counts only by what the checker saw it hold.
func (c *checker) majorityHolds(set quorum.VoterSet, offset int64, ch uint64) bool {
	held := 0
	for _, v := range set {
		m := c.s.byID[v.ID]
		if m == nil {
			continue
		}
		if v.DirectoryID != [16]byte{} && m.dir() != v.DirectoryID {
			if b, ok := c.wiped[replicaKey{v.ID, v.DirectoryID}][offset]; ok && b.chain == ch {
				held++
			}
			continue
		}
		if got, ok := c.chainAt(m, offset); (ok && got == ch) || (m.up && c.holds(m, offset, ch)) {
			held++
		}
	}
	return len(set) > 0 && held >= len(set)/2+1
}

func (c *checker) highWatermark(n *simNode, hw int64) error {
	if hw < 0 {
		return nil
	}
	if hw < n.view.lastHW {
		return fmt.Errorf("n%d high watermark went back from %d to %d", n.id, n.view.lastHW, hw)
	}
	n.view.lastHW = hw
	if hw == 0 || hw < n.disk.Log.StartOffset() {
		return nil // below a snapshot: the prefix was checked when it was written
	}
	ch, ok := c.chainAt(n, hw)
	if !ok {
		return fmt.Errorf("n%d reports high watermark %d, not a batch boundary of its log (start %d, end %d)", n.id, hw, n.disk.Log.StartOffset(), n.disk.Log.EndOffset())
	}
	if old, ok := c.committed[hw]; ok && old != ch {
		return fmt.Errorf("committed data changed: n%d holds a different history below high watermark %d", n.id, hw)
	}
	c.committed[hw] = ch
	c.hwByEpoch[n.view.epoch] = max(c.hwByEpoch[n.view.epoch], hw)
	if hw > c.maxHW {
		if c.maxHW > 0 {
			if below, ok := c.chainAt(n, c.maxHW); ok && below != c.maxHWChain {
				return fmt.Errorf("committed data lost: n%d commits %d on a history that differs below %d", n.id, hw, c.maxHW)
			}
		}
		c.maxHW, c.maxHWChain = hw, ch
	}
	return nil
}

// committedBefore is the highest high watermark any node reported in an
// epoch before epoch: what every leader of epoch must hold (Raft's leader
// completeness). A leader of an older epoch than a commit, elected late by
// votes that were delayed (a paused voter's), need not hold it: it can
// commit nothing, a majority having moved on.
func (c *checker) committedBefore(epoch int32) int64 {
	need := int64(0)
	for e, hw := range c.hwByEpoch {
		if e < epoch {
			need = max(need, hw)
		}
	}
	return need
}

// newestLeader is the up node leading the highest epoch any node has led,
// if any: a leader of an older epoch (paused, or cut off) that has not yet
// heard of a later one is not the quorum's leader, even once the later
// one resigned.
func (c *checker) newestLeader() *simNode {
	var best *simNode
	for _, n := range c.s.nodes {
		if n.up && n.view.role == quorum.RoleLeader && (best == nil || n.view.epoch > best.view.epoch) {
			best = n
		}
	}
	if best != nil {
		for epoch := range c.leaders {
			if epoch > best.view.epoch {
				return nil
			}
		}
	}
	return best
}

func (c *checker) livenessMet() bool {
	return c.newestLeader() != nil && c.maxHW > c.livenessFrom
}

// final checks, once the quorum is healthy again, that the newest leader
// holds the committed history and every answered proposal in it.
func (c *checker) final() error {
	n := c.newestLeader()
	if n == nil {
		return nil
	}
	if !c.holds(n, c.maxHW, c.maxHWChain) {
		return fmt.Errorf("leader n%d lacks the committed history up to %d", n.id, c.maxHW)
	}
	if err := c.acksInLog(n); err != nil {
		return err
	}
	return c.s.history.checkLinearizable()
}

// acksInLog checks, in one pass over n's log, that the records of every
// answered proposal are there at their offsets; what a snapshot covers was
// checked through the chain.
func (c *checker) acksInLog(n *simNode) error {
	want := map[int64][]byte{}
	from := int64(-1)
	log := n.disk.Log
	for _, a := range c.acks {
		for i, v := range a.values {
			if off := a.first + int64(i); off >= log.StartOffset() {
				want[off] = v
				if from < 0 || off < from {
					from = off
				}
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	_, err := node.ForEachLogRecord(log, from, log.EndOffset(), func(offset int64, _ metadata.Record, r batch.Record) error {
		if v, ok := want[offset]; ok {
			if !bytes.Equal(r.Value, v) {
				return fmt.Errorf("an answered proposal's record is not in leader n%d's log at offset %d", n.id, offset)
			}
			delete(want, offset)
		}
		return nil
	})
	if err == nil && len(want) > 0 {
		err = fmt.Errorf("%d records of answered proposals are missing from leader n%d's log (end %d)", len(want), n.id, log.EndOffset())
	}
	return err
}
