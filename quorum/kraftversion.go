// kraftversion.go owns the upgrade of kraft.version from 0 (a static
// quorum, controller.quorum.voters) to 1 (a dynamic one, KIP-853) on the
// leader, with Apache's rules (its LeaderState.maybeAppendUpgradedKRaftVersion).
//
// At kraft.version 0 a leader keeps the voter set in memory with what each
// voter told it through UpdateRaftVoter (its directory id, listeners and
// kraft.version range), starting from the static set with its own entry
// filled in. The upgrade succeeds only once every voter has told it so: it
// then appends one control batch, a KRaftVersionRecord and a VotersRecord
// of that set, which take effect as appended (voters.go), so the quorum is
// dynamic from that offset on. The controller answers UpdateFeatures when a
// record it writes after that batch commits, as Apache's does.

package quorum

import (
	"fmt"
	"slices"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

// KRaftUpgradeError is why the leader does not upgrade kraft.version: the
// Kafka error code and message UpdateFeatures answers with.
type KRaftUpgradeError struct {
	Code    int16
	Message string
}

func (e *KRaftUpgradeError) Error() string {
	return fmt.Sprintf("quorum: kraft.version upgrade refused (error %d): %s", e.Code, e.Message)
}

func upgradeRefused(code int16, format string, args ...any) *KRaftUpgradeError {
	return &KRaftUpgradeError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// kraftVersionName is how Apache's messages name a kraft.version (its
// enum's constant).
func kraftVersionName(v int16) string { return fmt.Sprintf("KRAFT_VERSION_%d", v) }

// UpgradeKRaftVersion upgrades kraft.version to version on the leader of
// epoch, or with validateOnly only says whether it would. Upgrading to the
// current version does nothing; a downgrade is refused. The upgrade needs
// every voter of the static set to have sent this leader UpdateRaftVoter
// with a directory id and a kraft.version range that holds version. The
// error, when not nil, is a *KRaftUpgradeError.
func (n *Node) UpgradeKRaftVersion(epoch int32, version int16, validateOnly bool) error {
	if n.role != RoleLeader {
		return upgradeRefused(errNotLeaderOrFollower, "Upgrade kraft version failed because the replica is not the current leader")
	}
	switch {
	case epoch < n.epoch:
		return upgradeRefused(errNotLeaderOrFollower,
			"Upgrade kraft version failed because the given epoch %d is stale. Current leader epoch is %d", epoch, n.epoch)
	case epoch > n.epoch:
		return upgradeRefused(errInvalidUpdateVersion,
			"Attempt to append from epoch %d which is larger than the current epoch of %d", epoch, n.epoch)
	}
	current := n.control.kraftVersion()
	switch {
	case version == current:
		return nil
	case version < current:
		return upgradeRefused(errInvalidUpdateVersion,
			"Invalid upgrade of kraft.version from version %s to %s because the new version is a downgrade",
			kraftVersionName(current), kraftVersionName(version))
	case version > maxKRaftVersion || n.lead.volatileVoters == nil:
		return upgradeRefused(errInvalidUpdateVersion, "Invalid upgrade of kraft.version from version %s to %s",
			kraftVersionName(current), kraftVersionName(version))
	}
	set := n.lead.volatileVoters
	if err := checkUpgradeVoters(set, n.voterSet, version); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	recs := []batch.Record{controlRecord(&metadata.KRaftVersionRecord{KRaftVersion: version})}
	if !slices.EqualFunc(set, n.voterSet, Voter.equal) {
		recs = append(recs, controlRecord(votersRecord(set)))
	}
	n.lead.volatileVoters = nil
	n.appendBatches(batch.Builder{BaseOffset: n.endOffset, LeaderEpoch: n.epoch, Timestamp: n.now, Control: true}.Encode(nil, recs))
	return nil
}

// checkUpgradeVoters applies Apache's checks of the in-memory set an
// upgrade writes: the same voters as the set in force, every one
// supporting version and known by its directory id. The last is an
// internal error in Apache (IllegalStateException), answered here as
// UNKNOWN_SERVER_ERROR.
func checkUpgradeVoters(set, persisted VoterSet, version int16) error {
	if !slices.Equal(set.IDs(), persisted.IDs()) {
		return upgradeRefused(errUnknownServerError, "Unable to update kraft.version to %s due to missing voters %v compared to %v",
			kraftVersionName(version), set.IDs(), persisted.IDs())
	}
	for _, v := range set {
		if version < v.MinKRaft || version > v.MaxKRaft {
			return upgradeRefused(errInvalidUpdateVersion,
				"Invalid upgrade of kraft.version to %s because not all of the voters support it", kraftVersionName(version))
		}
	}
	for _, v := range set {
		if v.DirectoryID == [16]byte{} {
			return upgradeRefused(errUnknownServerError, "Directory id must be known for all of the voters: %s", describeVoters(set))
		}
	}
	return nil
}

// describeVoters names each voter by id and directory, for messages.
func describeVoters(set VoterSet) string {
	out := "["
	for i, v := range set {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%d:%s", v.ID, metadata.Uuid(v.DirectoryID))
	}
	return out + "]"
}
