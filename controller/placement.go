package controller

import (
	"math/rand/v2"
	"slices"
)

// usableBroker is a broker replicas may be placed on.
type usableBroker struct {
	id     int32
	rack   string // "" when the broker has none
	fenced bool
}

// placeReplicas assigns replicas for count partitions, striping them across
// racks and brokers the way Apache's StripedReplicaPlacer does: partition
// leaders (first replicas) rotate over the unfenced brokers, rack by rack,
// and each partition's other replicas go to other racks first, then to
// other brokers. Fenced brokers are used only when there are not enough
// unfenced ones. The rotation starts at a random point (from rng), so many
// small topics do not all lead on the same broker.
func placeReplicas(rng *rand.Rand, brokers []usableBroker, count int, rf int16) ([][]int32, *Error) {
	return newCandidates(brokers).place(rng, count, rf)
}

// candidates are the brokers of one placement, striped once: the stripes
// depend only on the broker set, so the controller keeps them while it
// does not change.
type candidates struct {
	brokers         []usableBroker
	order, fallback []usableBroker // unfenced and fenced brokers, striped
	rackCount       int            // distinct racks in order
}

func newCandidates(brokers []usableBroker) *candidates {
	c := &candidates{brokers: brokers, order: stripe(brokers, false), fallback: stripe(brokers, true)}
	seen := map[string]bool{}
	for _, b := range c.order {
		if !seen[b.rack] {
			seen[b.rack] = true
			c.rackCount++
		}
	}
	return c
}

// place assigns replicas for count partitions (see placeReplicas).
func (c *candidates) place(rng *rand.Rand, count int, rf int16) ([][]int32, *Error) {
	brokers, order, fallback, rackCount := c.brokers, c.order, c.fallback, c.rackCount
	if rf <= 0 {
		return nil, apiErr(invalidReplicationFactor, "Invalid replication factor %d: the replication factor must be positive.", rf)
	}
	if len(order) == 0 { // order lists exactly the unfenced brokers
		return nil, apiErr(invalidReplicationFactor, "All brokers are currently fenced.")
	}
	if int(rf) > len(brokers) {
		return nil, apiErr(invalidReplicationFactor, "The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, len(brokers))
	}
	start := 0
	if rng != nil {
		start = rng.IntN(len(order))
	}
	out := make([][]int32, count)
	for p := range count {
		replicas := make([]int32, 0, rf)
		racks := map[string]bool{}
		first := order[(start+p)%len(order)]
		replicas = append(replicas, first.id)
		racks[first.rack] = true
		// Other replicas: walk the stripe after the leader, taking a new
		// rack each time while one is left, then any broker not yet used.
		pick := func(list []usableBroker, newRackOnly bool) {
			// Once every rack holds a replica no broker is on a new rack:
			// stop, rather than walk every broker for each partition.
			for i := 1; i <= len(list) && len(replicas) < int(rf) && !(newRackOnly && len(racks) >= rackCount); i++ {
				b := list[(start+p+i)%len(list)]
				if slices.Contains(replicas, b.id) || (newRackOnly && racks[b.rack]) {
					continue
				}
				replicas = append(replicas, b.id)
				racks[b.rack] = true
			}
		}
		pick(order, true)
		pick(order, false)
		pick(fallback, false)
		out[p] = replicas
	}
	return out, nil
}

// stripe orders brokers rack by rack, alternating racks: the first broker
// of each rack, then the second of each, and so on. Without fenced, fenced
// brokers are left out; with it, only they are listed.
func stripe(brokers []usableBroker, fenced bool) []usableBroker {
	byRack := map[string][]usableBroker{}
	var racks []string
	for _, b := range brokers {
		if b.fenced != fenced {
			continue
		}
		if _, ok := byRack[b.rack]; !ok {
			racks = append(racks, b.rack)
		}
		byRack[b.rack] = append(byRack[b.rack], b)
	}
	slices.Sort(racks)
	for _, r := range racks {
		slices.SortFunc(byRack[r], func(a, b usableBroker) int { return int(a.id - b.id) })
	}
	var out []usableBroker
	for i := 0; ; i++ {
		added := false
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}
