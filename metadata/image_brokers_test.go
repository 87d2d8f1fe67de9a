package metadata

import (
	"bytes"
	"maps"
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
				want := scanPartitions(im, func(p *Partition) bool { return slices.Contains(p.Replicas, b) })
				if got := im.PartitionsOfBroker(b); !slices.Equal(got, want) {
					t.Fatalf("seed %d record %d broker %d: index %v, scan %v", seed, i, b, got, want)
				}
			}
		}
	}
}

// TestLeaderlessPartitionsMatchScan: after every few records of random logs
// (topic removals and rolled-back transactions included), and in a clone,
// the index gives exactly the leaderless partitions a scan finds.
func TestLeaderlessPartitionsMatchScan(t *testing.T) {
	seen := 0
	for seed := range uint64(100) {
		im := NewImage()
		for i, r := range randomLog(seed, 300) {
			im.Apply(r)
			if i%5 != 0 {
				continue
			}
			want := scanPartitions(im, func(p *Partition) bool { return p.Leader == -1 })
			seen += len(want)
			if got := im.LeaderlessPartitions(); !slices.Equal(got, want) {
				t.Fatalf("seed %d record %d: index %v, scan %v", seed, i, got, want)
			}
			if c := im.Clone(); !slices.EqualFunc(c.LeaderlessPartitions(), want, func(a, b TopicPartition) bool {
				return a.Topic.ID == b.Topic.ID && a.Partition == b.Partition
			}) {
				t.Fatalf("seed %d record %d: the clone's index differs", seed, i)
			}
		}
	}
	if seen == 0 {
		t.Fatal("the random logs never left a partition leaderless")
	}
}

// scanPartitions finds by a scan of every partition those that hold, in
// topic id and partition order.
func scanPartitions(im *Image, holds func(p *Partition) bool) []TopicPartition {
	var out []TopicPartition
	ids := slices.SortedFunc(maps.Keys(im.Topics), func(x, y Uuid) int { return bytes.Compare(x[:], y[:]) })
	for _, id := range ids {
		t := im.Topics[id]
		for p := range t.Partitions {
			if t.Partitions[p].Exists && holds(&t.Partitions[p]) {
				out = append(out, TopicPartition{t, int32(p)})
			}
		}
	}
	return out
}
