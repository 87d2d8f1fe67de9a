package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"github.com/kraftd/kraftd/quorum"
)

// checker holds the global history the invariants are checked against.
//
//   - election safety: at most one leader per epoch;
//   - vote durability: one vote per node per epoch, across crashes;
//   - log matching: batches ending at the same (offset, epoch) on any two
//     nodes have the same content and the same whole prefix (checked with a
//     hash chain over the batches);
//   - committed data: every high watermark a node reports names one prefix
//     forever; it is never truncated from a node that holds it, and every
//     new leader holds the largest one;
//   - monotonicity: epochs never go backward on a node, even across crashes
//     (quorum-state is durable), and a node's HW never goes backward within
//     one incarnation.
type checker struct {
	s            *Sim
	leaders      map[int32]int32
	votes        map[[2]int32]int32
	durableEpoch map[int32]int32
	registry     map[batchKey]uint64
	committed    map[int64]uint64
	maxHW        int64
	maxHWChain   uint64
	livenessFrom int64
}

type batchKey struct {
	next  int64
	epoch int32
}

func newChecker(s *Sim) *checker {
	return &checker{
		s: s, leaders: map[int32]int32{}, votes: map[[2]int32]int32{}, durableEpoch: map[int32]int32{},
		registry: map[batchKey]uint64{}, committed: map[int64]uint64{}, maxHW: -1,
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

// resyncChains recomputes a node's hash chain after its log changed shape
// (crash, truncation, compaction, restart).
func (c *checker) resyncChains(n *simNode) {
	n.base = 0
	if id, ok := n.log.LatestSnapshot(); ok {
		n.base = c.registry[batchKey{id.EndOffset, id.Epoch}]
	}
	n.chains = n.chains[:0]
	prev := n.base
	for _, b := range n.log.Batches() {
		prev = chain(prev, b.Raw)
		n.chains = append(n.chains, prev)
	}
}

// chainAt is the node's chain value just below offset, if offset is the
// snapshot end or a batch boundary it holds.
func (c *checker) chainAt(n *simNode, offset int64) (uint64, bool) {
	if offset == n.log.StartOffset() {
		return n.base, true
	}
	for i, b := range n.log.Batches() {
		if b.Next == offset {
			return n.chains[i], true
		}
	}
	return 0, false
}

// holds reports whether the node's log (or the snapshot below it) contains
// the history ending at offset with the given chain value. A snapshot was
// checked against the registry when written, so offsets below it count.
func (c *checker) holds(n *simNode, offset int64, want uint64) bool {
	if offset < n.log.StartOffset() {
		return true
	}
	ch, ok := c.chainAt(n, offset)
	return ok && ch == want
}

func (c *checker) appended(n *simNode, from int) error {
	batches := n.log.Batches()
	prev := n.base
	if from > 0 {
		prev = n.chains[from-1]
	}
	n.chains = n.chains[:from]
	for _, b := range batches[from:] {
		prev = chain(prev, b.Raw)
		n.chains = append(n.chains, prev)
		key := batchKey{b.Next, b.Epoch}
		if old, ok := c.registry[key]; ok && old != prev {
			return fmt.Errorf("log matching violated: n%d holds a different history ending at offset %d epoch %d", n.id, b.Next, b.Epoch)
		}
		c.registry[key] = prev
	}
	return nil
}

func (c *checker) compacted(n *simNode) { c.resyncChains(n) }

func (c *checker) installed(n *simNode, id quorum.SnapshotID) error {
	if _, ok := c.registry[batchKey{id.EndOffset, id.Epoch}]; !ok {
		return fmt.Errorf("n%d installed snapshot %d@%d of a history no log ever held", n.id, id.EndOffset, id.Epoch)
	}
	if id.EndOffset > c.maxHW {
		return fmt.Errorf("n%d installed snapshot %d@%d beyond the committed offset %d", n.id, id.EndOffset, id.Epoch, c.maxHW)
	}
	c.resyncChains(n)
	return nil
}

func (c *checker) truncating(n *simNode, to int64) error {
	if to < c.maxHW {
		if ch, ok := c.chainAt(n, c.maxHW); ok && ch == c.maxHWChain && c.maxHW >= n.log.StartOffset() {
			return fmt.Errorf("n%d truncates to %d, below committed offset %d that it holds", n.id, to, c.maxHW)
		}
	}
	for i, b := range n.log.Batches() {
		if b.Next > to {
			if ch, ok := c.committed[b.Next]; ok && ch == n.chains[i] {
				return fmt.Errorf("n%d truncates committed batch ending at %d", n.id, b.Next)
			}
		}
	}
	return nil
}

func (c *checker) hardState(n *simNode, hs quorum.HardState) error {
	if hs.LeaderEpoch < c.durableEpoch[n.id] {
		return fmt.Errorf("n%d quorum-state epoch went back from %d to %d", n.id, c.durableEpoch[n.id], hs.LeaderEpoch)
	}
	c.durableEpoch[n.id] = hs.LeaderEpoch
	if hs.VotedID >= 0 {
		key := [2]int32{n.id, hs.LeaderEpoch}
		if prev, ok := c.votes[key]; ok && prev != hs.VotedID {
			return fmt.Errorf("vote durability violated: n%d voted for %d and then %d in epoch %d", n.id, prev, hs.VotedID, hs.LeaderEpoch)
		}
		c.votes[key] = hs.VotedID
	}
	return nil
}

func (c *checker) softState(n *simNode, ss quorum.SoftState, hw int64) error {
	if ss.Epoch < n.epoch {
		return fmt.Errorf("n%d epoch went back from %d to %d", n.id, n.epoch, ss.Epoch)
	}
	if ss.Role == quorum.RoleLeader {
		if l, ok := c.leaders[ss.Epoch]; ok && l != n.id {
			return fmt.Errorf("election safety violated: n%d and n%d both lead epoch %d", l, n.id, ss.Epoch)
		}
		c.leaders[ss.Epoch] = n.id
		if n.role != quorum.RoleLeader && c.maxHW > 0 {
			if !c.holds(n, c.maxHW, c.maxHWChain) {
				return fmt.Errorf("leader completeness violated: new leader n%d of epoch %d lacks committed offset %d", n.id, ss.Epoch, c.maxHW)
			}
		}
	}
	if hw < 0 {
		return nil
	}
	if hw < n.lastHW {
		return fmt.Errorf("n%d high watermark went back from %d to %d", n.id, n.lastHW, hw)
	}
	n.lastHW = hw
	if hw == 0 || hw < n.log.StartOffset() {
		return nil // below a snapshot: the prefix was checked when it was written
	}
	ch, ok := c.chainAt(n, hw)
	if !ok {
		return fmt.Errorf("n%d reports high watermark %d, not a batch boundary of its log (start %d, end %d)", n.id, hw, n.log.StartOffset(), n.log.EndOffset())
	}
	if old, ok := c.committed[hw]; ok && old != ch {
		return fmt.Errorf("committed data changed: n%d holds a different history below high watermark %d", n.id, hw)
	}
	c.committed[hw] = ch
	if hw > c.maxHW {
		if c.maxHW > 0 {
			// The new committed prefix must extend the old one.
			if below, ok := c.chainAt(n, c.maxHW); ok && below != c.maxHWChain {
				return fmt.Errorf("committed data lost: n%d commits %d on a history that differs below %d", n.id, hw, c.maxHW)
			}
		}
		c.maxHW, c.maxHWChain = hw, ch
	}
	return nil
}

func (c *checker) afterStep() error { return nil }

// newestLeader is the up node leading the highest epoch, if any.
func (c *checker) newestLeader() *simNode {
	var best *simNode
	for _, n := range c.s.nodes {
		if n.up && n.role == quorum.RoleLeader && (best == nil || n.epoch > best.epoch) {
			best = n
		}
	}
	return best
}

func (c *checker) livenessMet() bool {
	return c.newestLeader() != nil && c.maxHW > c.livenessFrom
}

// final checks, once the quorum is healthy again, that the newest leader
// holds the committed history.
func (c *checker) final() error {
	if n := c.newestLeader(); n != nil && !c.holds(n, c.maxHW, c.maxHWChain) {
		return fmt.Errorf("leader n%d lacks the committed history up to %d", n.id, c.maxHW)
	}
	return nil
}
