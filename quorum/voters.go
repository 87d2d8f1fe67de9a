// voters.go owns the voter set as a state machine of the log (Apache's
// KRaftControlRecordStateMachine and VoterSet): the VotersRecord and
// KRaftVersionRecord control records, applied at their offsets as batches
// are appended, taken from a snapshot's header when one is installed, and
// taken back when the log is truncated. Every voter decision of the node
// (who elects, who counts toward the high watermark, whether this node
// votes at all) reads the newest set here.

package quorum

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

// ErrBadControlRecord reports a VotersRecord or KRaftVersionRecord that
// cannot be applied: undecodable, or naming a voter twice. The node stops,
// as Apache's raft thread does: replicas that skipped it would disagree on
// who votes.
var ErrBadControlRecord = errors.New("quorum: bad voter set control record")

// Voter is one member of a voter set.
type Voter struct {
	ID int32
	// DirectoryID is zero when the set does not know it (a static set,
	// or a record written that way): then any directory of ID matches.
	DirectoryID [16]byte
	Endpoints   []Endpoint
	// MinKRaft and MaxKRaft are the kraft.version range the voter supports.
	MinKRaft, MaxKRaft int16
}

// matches reports whether the replica (id, dir) is this voter: Apache's
// VoterNode.isVoter.
func (v Voter) matches(id int32, dir [16]byte) bool {
	return v.ID == id && (v.DirectoryID == [16]byte{} || v.DirectoryID == dir)
}

func (v Voter) equal(o Voter) bool {
	return v.ID == o.ID && v.DirectoryID == o.DirectoryID && v.MinKRaft == o.MinKRaft &&
		v.MaxKRaft == o.MaxKRaft && slices.Equal(v.Endpoints, o.Endpoints)
}

// VoterSet is a set of voters sorted by id, one entry per id.
type VoterSet []Voter

// StaticVoterSet is controller.quorum.voters as a voter set: no directory
// ids, and kraft.version 0 only.
func StaticVoterSet(voters map[int32][]Endpoint) VoterSet {
	s := make(VoterSet, 0, len(voters))
	for id, eps := range voters {
		s = append(s, Voter{ID: id, Endpoints: slices.Clone(eps)})
	}
	slices.SortFunc(s, func(a, b Voter) int { return int(a.ID) - int(b.ID) })
	return s
}

// IDs are the voters' ids, ascending.
func (s VoterSet) IDs() []int32 {
	ids := make([]int32, len(s))
	for i, v := range s {
		ids[i] = v.ID
	}
	return ids
}

// Get returns the voter with id.
func (s VoterSet) Get(id int32) (Voter, bool) {
	i, ok := slices.BinarySearchFunc(s, id, func(v Voter, id int32) int { return int(v.ID) - int(id) })
	if !ok {
		return Voter{}, false
	}
	return s[i], true
}

// Has reports whether the replica (id, dir) is a voter of the set.
func (s VoterSet) Has(id int32, dir [16]byte) bool {
	v, ok := s.Get(id)
	return ok && v.matches(id, dir)
}

// with returns a copy of the set with v put in place of the voter of its
// id, or added.
func (s VoterSet) with(v Voter) VoterSet {
	out := slices.Clone(s)
	i, ok := slices.BinarySearchFunc(out, v.ID, func(v Voter, id int32) int { return int(v.ID) - int(id) })
	if ok {
		out[i] = v
	} else {
		out = slices.Insert(out, i, v)
	}
	return out
}

// without returns a copy of the set without the voter of id.
func (s VoterSet) without(id int32) VoterSet {
	return slices.DeleteFunc(slices.Clone(s), func(v Voter) bool { return v.ID == id })
}

// voterSetFromRecord reads a VotersRecord; it refuses a record that names
// an id twice or has no voter.
func voterSetFromRecord(r *metadata.VotersRecord) (VoterSet, error) {
	s := make(VoterSet, 0, len(r.Voters))
	for _, rv := range r.Voters {
		v := Voter{ID: rv.VoterId, DirectoryID: rv.VoterDirectoryId,
			MinKRaft: rv.KRaftVersionFeature.MinSupportedVersion, MaxKRaft: rv.KRaftVersionFeature.MaxSupportedVersion}
		for _, e := range rv.Endpoints {
			v.Endpoints = append(v.Endpoints, Endpoint{Name: e.Name, Host: e.Host, Port: e.Port})
		}
		s = append(s, v)
	}
	slices.SortFunc(s, func(a, b Voter) int { return int(a.ID) - int(b.ID) })
	for i := 1; i < len(s); i++ {
		if s[i].ID == s[i-1].ID {
			return nil, fmt.Errorf("%w: voter %d listed twice", ErrBadControlRecord, s[i].ID)
		}
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("%w: no voters", ErrBadControlRecord)
	}
	return s, nil
}

// controlHistory is the voter set and kraft.version at every offset the
// node holds. Entries are ordered by offset; an entry at offset -1 comes
// from the bootstrap snapshot, one at a snapshot's last contained offset
// from that snapshot's header. With no voter entry the static set holds.
type controlHistory struct {
	static VoterSet
	voters []votersAt
	kraft  []kraftAt
}

type votersAt struct {
	offset int64
	set    VoterSet
}

type kraftAt struct {
	offset  int64
	version int16
}

// last is the newest voter set.
func (h *controlHistory) last() VoterSet {
	if len(h.voters) == 0 {
		return h.static
	}
	return h.voters[len(h.voters)-1].set
}

// previous is the voter set in force before the newest one: the entry
// before it, or the static set when the newest is the first entry; false
// when there is none.
func (h *controlHistory) previous() (VoterSet, bool) {
	switch len(h.voters) {
	case 0:
		return nil, false
	case 1:
		return h.static, len(h.static) > 0
	}
	return h.voters[len(h.voters)-2].set, true
}

// lastOffset is the offset of the newest VotersRecord; false when the set
// is the static one.
func (h *controlHistory) lastOffset() (int64, bool) {
	if len(h.voters) == 0 {
		return 0, false
	}
	return h.voters[len(h.voters)-1].offset, true
}

// kraftVersion is the newest kraft.version, 0 when none is recorded.
func (h *controlHistory) kraftVersion() int16 {
	if len(h.kraft) == 0 {
		return 0
	}
	return h.kraft[len(h.kraft)-1].version
}

// at is the voter set and kraft.version in force at offset (what a
// snapshot ending just after offset repeats in its header); voters is nil
// when the static set holds there.
func (h *controlHistory) at(offset int64) (kraftVersion int16, voters VoterSet) {
	for _, e := range h.kraft {
		if e.offset <= offset {
			kraftVersion = e.version
		}
	}
	for _, e := range h.voters {
		if e.offset <= offset {
			voters = e.set
		}
	}
	return kraftVersion, voters
}

// truncateFrom takes back every entry at or after offset.
func (h *controlHistory) truncateFrom(offset int64) {
	h.voters = slices.DeleteFunc(h.voters, func(e votersAt) bool { return e.offset >= offset })
	h.kraft = slices.DeleteFunc(h.kraft, func(e kraftAt) bool { return e.offset >= offset })
}

// forgetBefore drops entries the log no longer reaches: those before
// start, but the newest of them, which is still in force there.
func (h *controlHistory) forgetBefore(start int64) {
	if i := lastIndexBefore(len(h.voters), func(i int) int64 { return h.voters[i].offset }, start); i > 0 {
		h.voters = slices.Delete(h.voters, 0, i)
	}
	if i := lastIndexBefore(len(h.kraft), func(i int) int64 { return h.kraft[i].offset }, start); i > 0 {
		h.kraft = slices.Delete(h.kraft, 0, i)
	}
}

// lastIndexBefore is the index of the last of n ascending offsets below
// start, or -1.
func lastIndexBefore(n int, offset func(int) int64, start int64) int {
	last := -1
	for i := 0; i < n && offset(i) < start; i++ {
		last = i
	}
	return last
}

// reset forgets everything: a snapshot replaces the whole log.
func (h *controlHistory) reset() { h.voters, h.kraft = nil, nil }

// applyControl applies one control record at offset; other control types
// (LeaderChange, snapshot header and footer, transaction markers) shape
// nothing here.
func (h *controlHistory) applyControl(offset int64, rec batch.Record) error {
	v, err := metadata.DecodeControl(rec.Key, rec.Value)
	if errors.Is(err, metadata.ErrNotKRaftControl) {
		return nil
	}
	if err != nil {
		if t := ControlType(rec.Key); t == (&metadata.VotersRecord{}).ControlType() || t == (&metadata.KRaftVersionRecord{}).ControlType() {
			return fmt.Errorf("%w at offset %d: %v", ErrBadControlRecord, offset, err)
		}
		return nil // a control record of no concern to the voter set
	}
	switch v := v.(type) {
	case *metadata.VotersRecord:
		set, err := voterSetFromRecord(v)
		if err != nil {
			return fmt.Errorf("offset %d: %w", offset, err)
		}
		h.voters = append(h.voters, votersAt{offset: offset, set: set})
	case *metadata.KRaftVersionRecord:
		h.kraft = append(h.kraft, kraftAt{offset: offset, version: v.KRaftVersion})
	}
	return nil
}

// applyBatches applies the control records of whole batches, in order,
// taking them one at a time (batch.Scanner) so that a batch packing many
// costs no more than one.
func (h *controlHistory) applyBatches(buf []byte) error {
	_, err := batch.Walk(buf, func(hd batch.Header, raw []byte) error {
		if !hd.IsControl() {
			return nil
		}
		var applied error
		_, err := batch.Scan(raw, func(r batch.Record) error {
			applied = h.applyControl(hd.BaseOffset+int64(r.OffsetDelta), r)
			return applied
		})
		if err != nil && applied == nil {
			return fmt.Errorf("%w: %v", ErrBadControlRecord, err)
		}
		return err
	})
	if err != nil && !errors.Is(err, ErrBadControlRecord) {
		err = fmt.Errorf("%w: %v", ErrBadControlRecord, err)
	}
	return err
}

// loadSnapshot replaces the history with what snapshot id's header says:
// its voter set and kraft.version, at its last contained offset.
func (h *controlHistory) loadSnapshot(log Log, id SnapshotID) error {
	info, err := readSnapshotHeader(log, id)
	if err != nil {
		return err
	}
	h.reset()
	at := id.EndOffset - 1
	if info.KRaftVersion != 0 || info.Voters != nil {
		h.kraft = append(h.kraft, kraftAt{offset: at, version: info.KRaftVersion})
	}
	if info.Voters != nil {
		set, err := voterSetFromRecord(info.Voters)
		if err != nil {
			return fmt.Errorf("snapshot %d@%d: %w", id.EndOffset, id.Epoch, err)
		}
		h.voters = append(h.voters, votersAt{offset: at, set: set})
	}
	return nil
}

var errHeaderRead = errors.New("header read")

// readSnapshotHeader reads snapshot id's header batch through the Log: it
// stops at the first data record, so the size of the image does not
// matter.
func readSnapshotHeader(log Log, id SnapshotID) (metadata.SnapshotInfo, error) {
	info, err := metadata.ReadSnapshot(&logSnapshotReader{log: log, id: id}, func(metadata.Record) error { return errHeaderRead })
	if err != nil && !errors.Is(err, errHeaderRead) {
		return info, fmt.Errorf("quorum: snapshot %d@%d: %w", id.EndOffset, id.Epoch, err)
	}
	return info, nil
}

// logSnapshotReader reads a snapshot sequentially through Log.ReadSnapshot.
type logSnapshotReader struct {
	log Log
	id  SnapshotID
	pos int64
	buf bytes.Buffer
}

func (r *logSnapshotReader) Read(p []byte) (int, error) {
	if r.buf.Len() == 0 {
		data, _, err := r.log.ReadSnapshot(r.id, r.pos, 64<<10)
		if err != nil {
			return 0, err
		}
		if len(data) == 0 {
			return 0, io.EOF
		}
		r.pos += int64(len(data))
		r.buf.Write(data)
	}
	return r.buf.Read(p)
}

// loadControlHistory reads the history from the log as it is at start:
// the newest snapshot's header (the bootstrap snapshot's when it is the
// only one), then every control record of the log after it, committed or
// not, as Apache does (a restarted node does not know its high watermark).
func loadControlHistory(log Log, static VoterSet) (controlHistory, error) {
	h := controlHistory{static: static}
	from := log.StartOffset()
	snap, ok := log.LatestSnapshot()
	if !ok || snap == (SnapshotID{}) {
		snap, ok = log.EarliestSnapshot()
		ok = ok && snap == (SnapshotID{})
	}
	if ok {
		if err := h.loadSnapshot(log, snap); err != nil {
			return h, err
		}
		from = max(from, snap.EndOffset)
	}
	for from < log.EndOffset() {
		data, err := log.Read(from, 1<<20)
		if err != nil {
			return h, fmt.Errorf("quorum: reading the log at %d: %w", from, err)
		}
		next := from
		_, err = batch.Walk(data, func(hd batch.Header, raw []byte) error {
			if hd.NextOffset() <= from {
				return nil
			}
			next = hd.NextOffset()
			return h.applyBatches(raw)
		})
		if err != nil {
			return h, err
		}
		if next == from {
			break // nothing readable past here
		}
		from = next
	}
	return h, nil
}

// refreshVoters makes the newest voter set the one the node acts on: it
// stands only if the set names it (by id and directory), or while the set
// that removed it is not known committed (electable), and a leader counts
// the set's majority from now on.
func (n *Node) refreshVoters() {
	n.voterSet = n.control.last()
	n.voters = n.voterSet.IDs()
	n.isVoter = n.voterSet.Has(n.id, n.cfg.DirectoryID)
	if n.lead != nil {
		n.lead.progress.setVoters(n.voterSet)
		n.maybeAdvanceHighWatermark()
	}
}

// electable says the node may stand for election: the newest voter set
// names it, or that set removed it and the node does not know the removal
// committed. The second is a rule beyond Apache's (whose replicas stand
// only as members of their newest set): a removed voter that alone holds
// its removal has the longest log, so no member can win without its vote,
// which it refuses to a shorter log; if the other members are no majority
// of the old set without it (a replica of theirs reformatted, or two
// voters shrinking to one), no leader would be elected again. Standing, it
// needs a majority of the newest set, the one it counts its election in as
// any candidate does (it does not count itself), commits its removal as
// leader and resigns (voterChangeCommitted), as Raft's removed leader does.
func (n *Node) electable() bool {
	if n.isVoter {
		return true
	}
	prev, ok := n.control.previous()
	if !ok || !prev.Has(n.id, n.cfg.DirectoryID) {
		return false
	}
	offset, _ := n.control.lastOffset()
	return n.hw <= offset
}

// applyAppended applies the control records of batches the node appends
// (as leader or follower); an unusable one stops the node.
func (n *Node) applyAppended(batches []byte) {
	before := len(n.control.voters)
	if err := n.control.applyBatches(batches); err != nil {
		n.fatal = fmt.Errorf("node %d: %w", n.id, err)
		return
	}
	if len(n.control.voters) != before {
		n.refreshVoters()
	}
}

// installedSnapshot takes the voter set from a snapshot the shell just
// installed: it replaces the whole log, and its header carries the set.
func (n *Node) installedSnapshot(id SnapshotID) {
	if err := n.control.loadSnapshot(n.log, id); err != nil {
		n.fatal = fmt.Errorf("node %d: %w", n.id, err)
		return
	}
	n.refreshVoters()
}

// ControlStateAt is the kraft.version and voter set in force at offset,
// which a snapshot ending just after offset writes into its header; voters
// is nil where the static set (controller.quorum.voters) holds.
func (n *Node) ControlStateAt(offset int64) (kraftVersion int16, voters VoterSet) {
	return n.control.at(offset)
}
