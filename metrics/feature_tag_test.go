package metrics

import "testing"

// TestFeatureTag: FinalizedLevel's featureName tags, as Apache 4.4.0's
// controller serves them through the JMX exporter.
func TestFeatureTag(t *testing.T) {
	for name, want := range map[string]string{
		"metadata.version":                 "metadataVersion",
		"kraft.version":                    "kraftVersion",
		"eligible.leader.replicas.version": "eligibleLeaderReplicasVersion",
		"share.version":                    "shareVersion",
		"plain":                            "plain",
	} {
		if got := featureTag(name); got != want {
			t.Errorf("featureTag(%q) = %q, want %q", name, got, want)
		}
	}
}
