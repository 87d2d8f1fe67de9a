//go:build matrix

package compat

import "testing"

// dynamicSmokeLines are the lines whose mixed dynamic quorum the smoke set
// runs: 4.0 and later (the matrix), but for the Versions the full
// scenario set covers (TestMixedDynamicAddRemoveController).
func dynamicSmokeLines() []string {
	var out []string
	for _, v := range smokeLines() {
		if ReleaseLine(v) != "3.9" && ReleaseLine(v) != ReleaseLine(Versions[len(Versions)-1]) {
			out = append(out, v)
		}
	}
	return out
}

// The mixed dynamic quorum of the smoke set, for 4.0.x, 4.2.x and 4.3.x:
// each node formatted by its own tool at the line's default
// metadata.version, an Apache leader adds a kraftd joiner with the line's
// kafka-metadata-quorum add-controller and removes it with
// remove-controller, and a kraftd leader does the same with an Apache
// joiner (runMixedAddRemove).
func TestReleaseLineDynamicQuorum(t *testing.T) {
	t.Parallel()
	for _, v := range dynamicSmokeLines() {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			KafkaCache(t, v)
			ReserveJVMs(t, 2) // one Apache controller and a tool
			for _, kinds := range [][2]string{{KindApache, KindKraftd}, {KindKraftd, KindApache}} {
				t.Run("leader-"+kinds[0]+"-joiner-"+kinds[1], func(t *testing.T) {
					at := stamp(t)
					runMixedAddRemove(t, v, kinds[0], kinds[1], NewLineDynamicMember)
					at("added and removed")
				})
			}
		})
	}
}
