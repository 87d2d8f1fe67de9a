package quorum

import (
	"testing"
	"testing/quick"
)

// naiveMajorityOffset tries every offset and keeps the largest one that more
// than half of the voters have reached.
func naiveMajorityOffset(endOffsets []int64) int64 {
	best := int64(-1)
	for _, candidate := range endOffsets {
		reached := 0
		for _, o := range endOffsets {
			if o >= candidate {
				reached++
			}
		}
		if reached >= majority(len(endOffsets)) && candidate > best {
			best = candidate
		}
	}
	return best
}

func TestMajorityOffsetQuick(t *testing.T) {
	f := func(raw []int16) bool {
		if len(raw) > 9 {
			raw = raw[:9]
		}
		offsets := make([]int64, len(raw))
		for i, r := range raw {
			offsets[i] = max(int64(r%50), -1) // many ties; -1 = unknown
		}
		if majorityOffset(offsets) != naiveMajorityOffset(offsets) {
			t.Logf("%v: %d vs naive %d", offsets, majorityOffset(offsets), naiveMajorityOffset(offsets))
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
}

func TestMajorityOffsetTable(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want int64
	}{
		{nil, -1},
		{[]int64{7}, 7},
		{[]int64{5, -1, -1}, -1},
		{[]int64{5, 3, -1}, 3},
		{[]int64{10, 10, 2, 1}, 2},
		{[]int64{10, 9, 8, 2, 1}, 8},
	} {
		if got := majorityOffset(tc.in); got != tc.want {
			t.Errorf("majorityOffset(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
