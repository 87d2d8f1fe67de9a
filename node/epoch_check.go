// epoch_check.go owns what start-up says about the epoch in quorum-state:
// a node must never run from an epoch it cannot advance from.

package node

import (
	"fmt"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage"
)

// ErrNoEpochLeft is the refusal to start from quorum-state at
// quorum.LastEpoch.
var ErrNoEpochLeft = fmt.Errorf("node: quorum-state holds epoch %d, the last epoch there is", quorum.LastEpoch)

// epochWarnMargin is how far above its log's last epoch, or how near the
// end of the epochs, quorum-state may stand before start-up warns: a
// million elections, more than an honest quorum holds in decades.
const epochWarnMargin = 1 << 20

// checkQuorumStateEpoch refuses quorum-state at quorum.LastEpoch, from
// which the node could never stand for election again (kraftd before issue
// 34, and Apache, took epochs this high from a single forged request), and
// warns when the epoch is far above the log's or near the end. Lowering the
// epoch itself would risk a second vote in an epoch this node voted in, so
// it says what an operator can do instead.
func (d *Disk) checkQuorumStateEpoch(log zerolog.Logger) error {
	epoch, logEpoch := d.HardState.LeaderEpoch, d.Log.LastEpoch()
	file := filepath.Join(d.node.Dir(), storage.MetadataLogDirName, storage.QuorumStateName)
	switch {
	case epoch >= quorum.LastEpoch && logEpoch >= quorum.LastEpoch:
		return fmt.Errorf("%w, and so does the log in %s: the quorum has no epoch left to elect a leader in. "+
			"Move the cluster's metadata to a newly formatted quorum", ErrNoEpochLeft, filepath.Dir(file))
	case epoch >= quorum.LastEpoch:
		return fmt.Errorf("%w (%s); the log's last epoch is %d. From it this node can never stand for election, "+
			"vote in an earlier epoch or follow a leader of one. If no voter's log holds a batch of epoch %d "+
			"(no leader was elected in it): stop this node, move that file aside and start it again; it starts "+
			"from its log's epoch and follows the leader the other voters have, or, if every voter holds this "+
			"epoch, stop them all and do so on each, and they elect a leader after the epochs of their logs",
			ErrNoEpochLeft, file, logEpoch, quorum.LastEpoch)
	case int64(epoch) > int64(logEpoch)+epochWarnMargin || epoch > quorum.LastEpoch-epochWarnMargin:
		log.Warn().Int32("quorum_state_epoch", epoch).Int32("log_epoch", logEpoch).Int64("epochs_left", int64(quorum.LastEpoch)-int64(epoch)).
			Str("file", file).
			Msg("quorum-state holds an epoch far above the log's or near the last one: an earlier version may have taken it " +
				"from a forged request; if this node never rejoins its quorum, stop it and move the file aside")
	}
	return nil
}
