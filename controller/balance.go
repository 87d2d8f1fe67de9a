package controller

import (
	"time"

	"github.com/kraftd/kraftd/metadata"
)

// maxBalanceElections bounds the preferred-leader elections one balancing
// pass writes, so that a cluster with many imbalanced partitions is
// rebalanced over several passes rather than in one huge batch (Apache's
// controller caps a pass the same way).
const maxBalanceElections = 1000

// BalanceLeaders moves leadership back to each partition's preferred
// replica (the first in its replica list) where that replica is in the
// ISR and on an active broker: the controller's side of
// auto.leader.rebalance.enable. It returns how many partitions it moved.
func (c *Core) BalanceLeaders(now time.Time, answer func(moved int, err error)) {
	moved := 0
	c.execFromImage(now, func(im *metadata.Image) ([]metadata.Record, error) {
		moved = 0
		var recs []metadata.Record
		for _, id := range sortedTopicIDs(im) {
			t := im.Topics[id]
			for pid := range t.Partitions {
				p := &t.Partitions[pid]
				if !p.Exists || len(p.Replicas) == 0 || p.Leader == p.Replicas[0] || !brokerActive(im, p.Replicas[0]) {
					continue
				}
				if e, rec := c.electOne(im, t.Name, int32(pid), electionPreferred); e == nil && rec.Leader == p.Replicas[0] {
					recs = append(recs, rec)
					if moved++; moved == maxBalanceElections {
						return recs, nil
					}
				}
			}
		}
		return recs, nil
	}, func(_ written, err error) {
		if err != nil {
			moved = 0
		}
		answer(moved, err)
	})
}
