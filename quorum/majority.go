// majority.go owns the majority math: quorum size and the offset a
// majority of voters has reached.

package quorum

import "slices"

// majorityOffset is the largest offset that a majority of the voters' end
// offsets reach: sorted in descending order, the entry at index n/2. Unknown
// end offsets are passed as -1 and so never help an offset reach a majority.
// The leader's own end offset must be among them.
func majorityOffset(endOffsets []int64) int64 {
	if len(endOffsets) == 0 {
		return -1
	}
	sorted := slices.Clone(endOffsets)
	slices.SortFunc(sorted, func(a, b int64) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	return sorted[len(sorted)/2]
}

// majority is the number of voters that make a quorum.
func majority(voters int) int { return voters/2 + 1 }
