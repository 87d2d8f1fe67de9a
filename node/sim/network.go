package sim

import (
	"math/rand/v2"
	"slices"

	"github.com/kraftd/kraftd/quorum"
)

// packet is a message in flight.
type packet struct {
	msg       quorum.Message
	deliverAt int64
	seq       uint64
}

// network is the simulated network: every message gets a random delay (so
// messages reorder), may be dropped or duplicated, and is lost when its link
// is cut by a partition at send or delivery time.
type network struct {
	rand     *rand.Rand
	faults   *Faults
	inFlight []packet
	seq      uint64
	// cut[from][to] drops messages on the directed link.
	cut map[[2]int32]bool
}

func newNetwork(r *rand.Rand, f *Faults) *network {
	return &network{rand: r, faults: f, cut: map[[2]int32]bool{}}
}

func (n *network) delay() int64 {
	f := n.faults
	return f.DelayMinMs + n.rand.Int64N(f.DelayMaxMs-f.DelayMinMs+1)
}

// send schedules m; it reports whether the message was lost outright.
func (n *network) send(now int64, m quorum.Message) (lost bool) {
	if n.cut[[2]int32{m.From, m.To}] || n.rand.Float64() < n.faults.DropProb {
		return true
	}
	n.push(now+n.delay(), m)
	if n.rand.Float64() < n.faults.DuplicateProb {
		n.push(now+n.delay(), m)
	}
	return false
}

func (n *network) push(at int64, m quorum.Message) {
	n.seq++
	n.inFlight = append(n.inFlight, packet{msg: m, deliverAt: at, seq: n.seq})
}

// due removes and returns the packets whose time has come, in delivery
// order, dropping those whose link was cut meanwhile.
func (n *network) due(now int64) []quorum.Message {
	var ready []packet
	keep := n.inFlight[:0]
	for _, p := range n.inFlight {
		if p.deliverAt <= now {
			ready = append(ready, p)
		} else {
			keep = append(keep, p)
		}
	}
	n.inFlight = keep
	slices.SortFunc(ready, func(a, b packet) int {
		if a.deliverAt != b.deliverAt {
			return int(a.deliverAt - b.deliverAt)
		}
		return int(a.seq - b.seq)
	})
	out := make([]quorum.Message, 0, len(ready))
	for _, p := range ready {
		if !n.cut[[2]int32{p.msg.From, p.msg.To}] {
			out = append(out, p.msg)
		}
	}
	return out
}

// partition cuts links according to the seed's partition mode.
func (n *network) partition(ids []int32, voters []int32) string {
	clear(n.cut)
	switch n.faults.PartitionMode {
	case PartitionIsolateOne:
		victim := voters[n.rand.IntN(len(voters))]
		for _, o := range ids {
			if o != victim {
				n.cut[[2]int32{victim, o}] = true
				if !n.faults.Asymmetric {
					n.cut[[2]int32{o, victim}] = true
				}
			}
		}
		return "isolate"
	case PartitionRandomSplit:
		side := map[int32]bool{}
		for _, id := range ids {
			side[id] = n.rand.IntN(2) == 0
		}
		for _, a := range ids {
			for _, b := range ids {
				if a != b && side[a] && !side[b] {
					n.cut[[2]int32{a, b}] = true
					if !n.faults.Asymmetric {
						n.cut[[2]int32{b, a}] = true
					}
				}
			}
		}
		return "split"
	}
	return ""
}

func (n *network) heal() { clear(n.cut) }
