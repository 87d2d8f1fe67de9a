package metadata

import (
	"math/rand/v2"
	"testing"
)

// TestApplyAllMatchesApply: ApplyAll leaves the image Apply would, one
// record at a time, and fails at the same records. The logs mix random
// valid logs with long runs of partition changes (where ApplyAll groups
// them), changes to the same partition in a row, and changes that do not
// apply (unknown topic or partition), inside and outside transactions.
func TestApplyAllMatchesApply(t *testing.T) {
	for seed := range uint64(100) {
		log := randomLog(seed, 150)
		g := &logGen{rnd: rand.New(rand.NewPCG(seed, 7)), im: imageOf(t, log)}
		g.mv = g.im.Features[metadataVersionFeature]
		g.elr = g.im.Features[elrFeature] >= 1
		for range 300 {
			switch g.rnd.IntN(20) {
			case 0:
				g.log = append(g.log, &PartitionChangeRecord{TopicId: g.uuid(), Leader: -2, LeaderRecoveryState: -1})
			case 1:
				if ids := g.topicIDs(); len(ids) > 0 {
					g.log = append(g.log, &PartitionChangeRecord{TopicId: ids[0], PartitionId: int32(g.rnd.IntN(40) - 10), Leader: -2, LeaderRecoveryState: -1})
				}
			case 2:
				g.step()
			default:
				g.partitionChange()
				if n := len(g.log); n > 0 && g.rnd.IntN(4) == 0 {
					g.log = append(g.log, g.log[n-1]) // the same change again
				}
			}
		}
		log = append(log, g.log...)

		one := NewImage()
		var oneFailed []int
		for i, r := range log {
			if one.Apply(r) != nil {
				oneFailed = append(oneFailed, i)
			}
		}
		all := NewImage()
		var allFailed []int
		for done := 0; done < len(log); {
			n, err := all.ApplyAll(log[done:])
			done += n
			if err != nil {
				allFailed = append(allFailed, done)
				done++
			}
		}
		if all.Hash() != one.Hash() {
			t.Fatalf("seed %d: ApplyAll built a different image than Apply", seed)
		}
		if len(allFailed) != len(oneFailed) {
			t.Fatalf("seed %d: ApplyAll failed at %v, Apply at %v", seed, allFailed, oneFailed)
		}
		for i := range allFailed {
			if allFailed[i] != oneFailed[i] {
				t.Fatalf("seed %d: ApplyAll failed at %v, Apply at %v", seed, allFailed, oneFailed)
			}
		}
	}
}
