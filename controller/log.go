package controller

import (
	"io"
	"strings"

	"github.com/kraftd/kraftd/metadata"
)

// Log is what the core needs from the consensus layer: a way to propose
// records for a leader epoch, and whether this node leads.
//
// Contract. Propose returns at once and never calls stamp or done itself:
// both are called later, from the caller's event loop, never re-entrantly
// from inside Propose (the simulator calls them from its one goroutine; in
// production the concurrent wrapper runs them under its lock, on a
// goroutine that is not the node loop's, which they must never block).
//
// Proposals reach the log in call order, and only while this node leads
// epoch: since a node never leads an epoch again once it has lost it, the
// proposals of an epoch that land are a prefix of those made, so a write
// never lands without every write made before it for the epoch.
//
// stamp is not nil only for records that carry their own offset (a broker
// epoch is the offset of its registration): it is called with the offset
// of the first record once the log has taken them. A log that encodes the
// records when it takes them, before it can call stamp on the caller's
// loop, must write that offset into them first with StampOffsets.
//
// done is called exactly once: with the offset of the first record and nil
// once the records have committed and been replayed into the committed
// image (Controller.Replay), else with the reason they may never commit
// (ErrNotController when this node is not, or stops being, the leader of
// epoch) and the first offset if they were taken, -1 if not. Propose
// returns an error, and never calls done, only when it could not hand the
// records over.
type Log interface {
	Propose(epoch int32, records []metadata.Record, stamp func(firstOffset int64), done func(firstOffset int64, err error)) error
	// Leader reports whether this node leads the quorum, and in which epoch.
	Leader() (epoch int32, ok bool)
}

// KRaftLog is a Log whose quorum can change kraft.version, which the
// quorum owns (KIP-853): the controller hands a kafka-features upgrade of
// kraft.version over and answers when it commits, as Apache's
// FeatureControlManager does through its RaftClient.
type KRaftLog interface {
	Log
	// KRaftVersion is the quorum's kraft.version as this node has it.
	KRaftVersion() int16
	// ProposeKRaftUpgrade is Propose with the quorum's kraft.version
	// upgraded to version just before records, so their commit is the
	// upgrade's. A quorum that refuses the upgrade writes nothing and
	// calls done with -1 and a *KRaftRefusal. With validateOnly nothing
	// is written either way: done follows the check with -1.
	ProposeKRaftUpgrade(epoch int32, version int16, validateOnly bool, records []metadata.Record, done func(firstOffset int64, err error)) error
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

// StampOffsets writes first, the offset the log gives the first of
// records, into the records that carry their own offset. It touches
// nothing but records, so a log may call it on its own goroutine; calling
// it twice with the same offset changes nothing.
func StampOffsets(records []metadata.Record, first int64) {
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
