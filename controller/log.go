package controller

import (
	"io"
	"strings"

	"github.com/kraftd/kraftd/metadata"
)

// Log is where the core's writes go: records proposed for a leader epoch,
// and a kraft.version upgrade handed to the quorum with them. It is one of
// the core's outputs; the node runtime's controller seam (node/seam.go)
// implements it, in production and in the simulator alike.
//
// Contract. Propose returns at once and never calls stamp or done itself:
// both are called later, on the goroutine that drives the core, as inputs
// of their own, never re-entrantly from inside Propose.
//
// Proposals reach the log in call order, and only while this node leads
// epoch: since a node never leads an epoch again once it has lost it, the
// proposals of an epoch that land are a prefix of those made, so a write
// never lands without every write made before it for the epoch.
//
// stamp is not nil only for records that carry their own offset (a broker
// epoch is the offset of its registration): it is called with the offset
// of the first record once the log has taken them, before it encodes
// them, so the core writes that offset into the records (stampOffsets)
// and no one else touches them.
//
// done is called exactly once: with the offset of the first record and nil
// once the records have committed and been replayed into the committed
// image (Controller.Replay), else with the reason they may never commit
// (ErrNotController when this node is not, or stops being, the leader of
// epoch) and the first offset if they were taken, -1 if not. Propose
// returns an error, and never calls done, only when it could not hand the
// records over.
//
// ProposeKRaftUpgrade is Propose with the quorum's kraft.version, which
// the quorum owns (KIP-853), upgraded to version just before records, so
// their commit is the upgrade's, as Apache's FeatureControlManager hands
// the upgrade to its RaftClient. A quorum that refuses the upgrade writes
// nothing and calls done with -1 and a *KRaftRefusal. With validateOnly
// nothing is written either way: done follows the check with -1.
type Log interface {
	Propose(epoch int32, records []metadata.Record, stamp func(firstOffset int64), done func(firstOffset int64, err error)) error
	ProposeKRaftUpgrade(epoch int32, version int16, validateOnly bool, records []metadata.Record, done func(firstOffset int64, err error)) error
}

// Quorum is the core's input saying where the quorum stands as this node
// sees it: whether it leads, in which epoch, and the quorum's
// kraft.version. The runtime gives it whenever one of them changes, before
// any other input that follows the change.
type Quorum struct {
	Epoch        int32
	Leader       bool
	KRaftVersion int16
}

// KRaftRefusal is the quorum's reason for not upgrading kraft.version,
// answered to the client as it is.
type KRaftRefusal struct{ Err *Error }

func (r *KRaftRefusal) Error() string { return r.Err.Error() }
func (r *KRaftRefusal) Unwrap() error { return r.Err }

// kraftUpgrade is the kraft.version an operation's records carry to the
// quorum (Core.kraftUpgrade).
type kraftUpgrade struct {
	version      int16
	validateOnly bool
}

// needsOffset reports whether records carry their own offset: a
// registration of a new broker incarnation, whose epoch is the offset of
// the first record written for it.
func needsOffset(records []metadata.Record) bool {
	for _, r := range records {
		if reg, ok := r.(*metadata.RegisterBrokerRecord); ok && reg.BrokerEpoch < 0 {
			return true
		}
	}
	return false
}

// stampOffsets writes first, the offset the log gives the first of
// records, into the records that carry their own offset; calling it twice
// with the same offset changes nothing.
func stampOffsets(records []metadata.Record, first int64) {
	for _, r := range records {
		if reg, ok := r.(*metadata.RegisterBrokerRecord); ok && reg.BrokerEpoch < 0 {
			reg.BrokerEpoch = first
		}
	}
}

// newTopicID draws a topic id from ids, a random UUID v4 as Apache's
// Uuid.randomUuid makes one: the version and variant bits are set, and an
// id that is reserved (zero, or below 100 in its last byte with the rest
// zero) or whose text form starts with '-' is drawn again. ids is the
// injected source (crypto/rand in production, a seeded one in the
// simulator), so the core itself reads no global randomness.
func newTopicID(ids io.Reader) [16]byte {
	for {
		var id [16]byte
		if _, err := io.ReadFull(ids, id[:]); err != nil {
			panic("controller: reading a topic id: " + err.Error())
		}
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // variant IETF
		u := metadata.Uuid(id)
		if reservedDir(u) || u == (metadata.Uuid{15: 1}) || strings.HasPrefix(u.String(), "-") {
			continue
		}
		var hi [15]byte
		if [15]byte(id[:15]) == hi && id[15] < 100 {
			continue
		}
		return id
	}
}
