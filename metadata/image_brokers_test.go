package metadata

import (
	"bytes"
	"slices"
	"testing"
)

// TestPartitionsOfBrokerMatchesScan: after every record of random logs
// (reassignments, topic removals, rolled-back transactions included), the
// index gives exactly the partitions a scan finds listing the broker.
func TestPartitionsOfBrokerMatchesScan(t *testing.T) {
	for seed := range uint64(100) {
		im := NewImage()
		for i, r := range randomLog(seed, 200) {
			im.Apply(r)
			if i%7 != 0 {
				continue
			}
			for b := range int32(6) {
				var want []TopicPartition
				ids := slices.SortedFunc(func(yield func(Uuid) bool) {
					for id := range im.Topics {
						if !yield(id) {
							return
						}
					}
				}, func(x, y Uuid) int { return bytes.Compare(x[:], y[:]) })
				for _, id := range ids {
					tp := im.Topics[id]
					for p := range tp.Partitions {
						if tp.Partitions[p].Exists && slices.Contains(tp.Partitions[p].Replicas, b) {
							want = append(want, TopicPartition{tp, int32(p)})
						}
					}
				}
				if got := im.PartitionsOfBroker(b); !slices.Equal(got, want) {
					t.Fatalf("seed %d record %d broker %d: index %v, scan %v", seed, i, b, got, want)
				}
			}
		}
	}
}
