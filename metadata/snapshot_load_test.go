package metadata

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestLoaderDecodesPartitionsLikeDecodeValue: the loader's fast path for
// PartitionRecords yields what DecodeValue does (up to the all-MIGRATING
// directories and the shared ISR, which the image stores alike), and hands
// every value it does not fully accept, truncated ones included, to
// DecodeValue.
func TestLoaderDecodesPartitionsLikeDecodeValue(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	list := func(empty bool) []int32 {
		if empty && rnd.IntN(2) == 0 {
			return nil
		}
		out := make([]int32, rnd.IntN(4))
		for i := range out {
			out[i] = rnd.Int32N(10)
		}
		return out
	}
	for i := range 3000 {
		rec := &PartitionRecord{Version: int16(rnd.IntN(3)), PartitionId: rnd.Int32N(50), TopicId: Uuid{byte(i)},
			Replicas: list(false), RemovingReplicas: list(true), AddingReplicas: list(true),
			Leader: rnd.Int32N(5), LeaderEpoch: rnd.Int32N(5), PartitionEpoch: rnd.Int32N(5)}
		rec.Isr = rec.Replicas
		if rnd.IntN(2) == 0 {
			rec.Isr = list(false)
		}
		if rec.Version >= 1 {
			rec.Directories = make([]Uuid, len(rec.Replicas))
			if len(rec.Directories) > 0 && rnd.IntN(2) == 0 {
				rec.Directories[0] = Uuid{1}
			}
		}
		if rnd.IntN(10) == 0 {
			rec.LeaderRecoveryState = 1
		}
		if rec.Version >= 2 && rnd.IntN(10) == 0 {
			rec.EligibleLeaderReplicas = []int32{}
		}
		value := EncodeValue(rec)
		if rnd.IntN(4) == 0 {
			value = value[:rnd.IntN(len(value))]
		}
		l := &snapshotLoader{im: NewImage()}
		got, gotErr := l.decode(value)
		want, wantErr := DecodeValue(value)
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Fatalf("record %d: loader error %v, DecodeValue error %v", i, gotErr, wantErr)
		}
		if wantErr != nil {
			continue
		}
		g, w := *got.(*PartitionRecord), *want.(*PartitionRecord)
		if partitionFromRecord(&g).Directories() == nil {
			g.Directories = nil
		}
		if partitionFromRecord(&w).Directories() == nil {
			w.Directories = nil
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("record %d: loader decoded\n%+v\nDecodeValue\n%+v", i, g, w)
		}
	}
}
