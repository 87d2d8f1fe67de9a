package controller

import (
	"fmt"
	"strings"
)

// Feature names finalized in the metadata log.
const (
	MetadataVersionFeature = "metadata.version"
	KRaftVersionFeature    = "kraft.version"
	ELRFeature             = "eligible.leader.replicas.version"
)

// FeatureRange is the inclusive range of levels kraftd supports for one feature.
type FeatureRange struct {
	Name     string
	Min, Max int16
}

// SupportedFeatures are the ranges kraftd advertises in ApiVersions and
// registers as a controller. They match an Apache 4.4 controller (its
// production levels), so either implementation can finalize any level the
// other accepts; a level an older Apache controller of the quorum does not
// know is refused by UpdateFeatures, which checks every registered
// controller's range. Sorted by name.
var SupportedFeatures = []FeatureRange{
	{"eligible.leader.replicas.version", 0, 1},
	{"group.version", 0, 1},
	{KRaftVersionFeature, 0, 1},
	{MetadataVersionFeature, MinMetadataVersion, LatestMetadataVersion},
	{"share.version", 0, 2},   // 1: share groups (4.2-IV0), 2: their dead-letter queue (4.4-IV0)
	{"streams.version", 0, 1}, // 1: streams groups (4.2-IV1)
	{"transaction.version", 0, 2},
}

// metadata.version levels kraftd knows by name. Level n is
// metadataVersionNames[n-MinMetadataVersion].
const (
	MinMetadataVersion    int16 = 7  // 3.3-IV3
	LatestMetadataVersion int16 = 33 // 4.4-IV2, the newest production level of Apache 4.4
)

var metadataVersionNames = []string{
	"3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
	"3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0",
	"4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1",
	"4.2-IV0", "4.2-IV1", "4.3-IV0", "4.4-IV0", "4.4-IV1", "4.4-IV2",
}

// metadataChangedAt marks the levels whose records differ from the level
// below (Apache's MetadataVersion.didMetadataChange). A downgrade across any
// of them could lose metadata, so it is refused; a downgrade across only
// unmarked levels is safe (4.1-IV1 to 4.0-IV3, 4.4-IV0 to 4.3-IV0, ...).
var metadataChangedAt = map[int16]bool{
	7: true, 8: true, 11: true, 13: true, 14: true, 15: true, 17: true, 23: true,
	30: true, 32: true, 33: true,
}

// MetadataChangedBetween reports whether some level in (low, high] changed
// the metadata records, so that going from high down to low may lose data.
func MetadataChangedBetween(low, high int16) bool {
	for l := high; l > low; l-- {
		if metadataChangedAt[l] {
			return true
		}
	}
	return false
}

// Levels at which metadata.version turns on behaviour kraftd depends on.
const (
	MVControllerRegistration int16 = 15 // 3.7-IV0: RegisterControllerRecord, DescribeCluster on controllers
	MVDirectoryAssignment    int16 = 17 // 3.7-IV2: broker log dirs, RegisterBrokerRecord v3
	MVMetadataTransactions   int16 = 13 // 3.6-IV1: Begin/EndTransactionRecord (KIP-868)
	MVScram                  int16 = 11 // 3.5-IV2: UserScramCredentialRecord (KIP-554)
	MVDelegationTokens       int16 = 14 // 3.6-IV2: DelegationTokenRecord (KIP-900)
	MVKRaftVersion1          int16 = 21 // 3.9-IV0: kraft.version 1 (KIP-853)
	MVCordonedLogDirs        int16 = 30 // 4.3-IV0: cordoned log dirs (KIP-1066), RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3
	MVCidrACLs               int16 = 32 // 4.4-IV1: ACL hosts may be CIDR blocks (KIP-1276)
	MVControllerUnregister   int16 = 33 // 4.4-IV2: UnregisterController and UnregisterControllerRecord (KIP-1312)
)

// MetadataVersionName returns the release name of a metadata.version level.
func MetadataVersionName(level int16) string {
	if level < MinMetadataVersion || level > LatestMetadataVersion {
		return fmt.Sprintf("level-%d", level)
	}
	return metadataVersionNames[level-MinMetadataVersion]
}

// ParseReleaseVersion maps `--release-version` to a metadata.version level.
// Like Apache, "4.1" means the newest level of that release and "4.1-IV0"
// names one level exactly.
func ParseReleaseVersion(s string) (int16, error) {
	var found int16 = -1
	for i, name := range metadataVersionNames {
		release, _, _ := strings.Cut(name, "-")
		if name == s || release == s {
			found = int16(i) + MinMetadataVersion
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("unknown release version %q: kraftd knows %s to %s", s, metadataVersionNames[0], metadataVersionNames[len(metadataVersionNames)-1])
	}
	return found, nil
}

// featureDefaults gives, per feature, the metadata.version from which each
// level is the default at format time (Apache's Feature.defaultLevel). Levels
// whose metadata.version kraftd does not support are left out.
var featureDefaults = map[string][]struct{ level, sinceMV int16 }{
	"transaction.version":              {{1, 24}, {2, 24}},
	"group.version":                    {{1, 22}},
	"eligible.leader.replicas.version": {{1, 26}},
	"share.version":                    {{1, 28}, {2, 31}},
	"streams.version":                  {{1, 29}},
}

// DefaultFeatureLevels are the non-zero feature levels that formatting at
// metadata.version mv writes into bootstrap.checkpoint, besides
// metadata.version itself (kraft.version never goes there).
func DefaultFeatureLevels(mv int16) map[string]int16 {
	out := map[string]int16{}
	for name, levels := range featureDefaults {
		for _, l := range levels {
			if mv >= l.sinceMV {
				out[name] = l.level
			}
		}
	}
	return out
}
