package controller

import (
	"slices"

	"github.com/kraftd/kraftd/metadata"
)

// Cordoned log directories (KIP-1066, metadata.version 4.3-IV0): a broker
// lists in each heartbeat (v2) the directories that must take no new
// partitions. The controller records the list when it changes and places no
// new replica on a broker whose every directory is cordoned, as Apache's
// ReplicationControlManager.handleDirectoriesCordoned and
// BrokerRegistration.hasUncordonedDirs do.

// cordonedDirRecords returns the BrokerRegistrationChangeRecord (v3) that
// records a broker's cordoned directories, or nothing when the broker sent
// none (null: it has not caught up with the metadata yet) or the set is the
// one already recorded. A registration that never had a list (null) always
// takes the first one, even an empty one.
func cordonedDirRecords(im *metadata.Image, b metadata.RegisterBrokerRecord, cordoned [][16]byte) []metadata.Record {
	if cordoned == nil || metadataVersion(im) < MVCordonedLogDirs {
		return nil
	}
	dirs := make([]metadata.Uuid, 0, len(cordoned))
	for _, d := range cordoned {
		dirs = append(dirs, metadata.Uuid(d))
	}
	if b.CordonedLogDirs != nil && sameDirSet(b.CordonedLogDirs, dirs) {
		return nil
	}
	change := &metadata.BrokerRegistrationChangeRecord{BrokerId: b.BrokerId, BrokerEpoch: b.BrokerEpoch, CordonedLogDirs: dirs}
	change.SetVersion(3)
	return []metadata.Record{change}
}

// sameDirSet compares two directory lists as sets.
func sameDirSet(a, b []metadata.Uuid) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.SortFunc(x, compareUuid)
	slices.SortFunc(y, compareUuid)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// hasUncordonedDirs reports whether new replicas may go to the broker: it
// registered no directories, has not reported cordoned ones, or has one
// directory that is not cordoned.
func hasUncordonedDirs(b metadata.RegisterBrokerRecord) bool {
	if len(b.LogDirs) == 0 || b.CordonedLogDirs == nil {
		return true
	}
	for _, d := range b.LogDirs {
		if !slices.Contains(b.CordonedLogDirs, d) {
			return true
		}
	}
	return false
}
