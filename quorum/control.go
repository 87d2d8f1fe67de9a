package quorum

import (
	"slices"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

// Control records are encoded by package metadata's generated codec, the
// one that also reads them back from snapshots and the log; quorum only
// chooses what goes in them.

// leaderChange is the LeaderChangeMessage (v0, as Apache writes it) a
// leader appends at the start of each epoch.
func leaderChange(leader int32, voters, granting []int32) *metadata.LeaderChangeMessage {
	m := &metadata.LeaderChangeMessage{LeaderId: leader}
	for _, v := range voters {
		m.Voters = append(m.Voters, metadata.LeaderChangeMessageVoter{VoterId: v})
	}
	for _, v := range granting {
		m.GrantingVoters = append(m.GrantingVoters, metadata.LeaderChangeMessageVoter{VoterId: v})
	}
	return m
}

// Record is the VotersRecord (v0, as Apache writes it) of the set.
func (s VoterSet) Record() *metadata.VotersRecord { return votersRecord(s) }

// votersRecord is the VotersRecord v0 of a voter set.
func votersRecord(voters VoterSet) *metadata.VotersRecord {
	m := &metadata.VotersRecord{Voters: make([]metadata.VotersRecordVoter, 0, len(voters))}
	for _, v := range voters {
		rv := metadata.VotersRecordVoter{
			VoterId:          v.ID,
			VoterDirectoryId: v.DirectoryID,
			Endpoints:        make([]metadata.VotersRecordEndpoint, 0, len(v.Endpoints)),
			KRaftVersionFeature: metadata.VotersRecordKRaftVersionFeature{
				MinSupportedVersion: v.MinKRaft, MaxSupportedVersion: v.MaxKRaft,
			},
		}
		for _, e := range v.Endpoints {
			rv.Endpoints = append(rv.Endpoints, metadata.VotersRecordEndpoint{Name: e.Name, Host: e.Host, Port: e.Port})
		}
		m.Voters = append(m.Voters, rv)
	}
	return m
}

func controlRecord(v metadata.ControlValue) batch.Record {
	key, value := metadata.EncodeControl(v)
	return batch.Record{Key: key, Value: value}
}

// maxKRaftVersion is the newest kraft.version this node speaks; a voter
// names the range it supports in the voter set.
const maxKRaftVersion = 1

// localVoter is this node as the voter set should name it: its directory,
// its own listeners and the kraft.version range it supports.
func (n *Node) localVoter() Voter {
	v := Voter{ID: n.id, DirectoryID: n.cfg.DirectoryID, Endpoints: slices.Clone(n.cfg.Endpoints), MinKRaft: 0, MaxKRaft: maxKRaftVersion}
	if len(v.Endpoints) == 0 {
		// No listeners configured (a test): keep the ones the set has.
		named, _ := n.voterSet.Get(n.id)
		v.Endpoints = named.Endpoints
	}
	return v
}

// startOfEpochBatch builds the control batch a new leader appends first:
// LeaderChange, then, at kraft.version 1 or above, KRaftVersion and Voters,
// but only where Apache's LeaderState writes them: when no VotersRecord is
// in the log yet (the set came from the bootstrap snapshot, at offset -1),
// or when the set names this node otherwise than it is (a zero directory
// id, other listeners, another kraft.version range). The set written has
// this node's entry put right, so a set written without the leader's
// directory id is repaired by the next leader of that node.
func (n *Node) startOfEpochBatch(granting []int32) []byte {
	recs := []batch.Record{controlRecord(leaderChange(n.id, n.voters, granting))}
	if kv := n.control.kraftVersion(); kv >= 1 {
		offset, ok := n.control.lastOffset()
		self, named := n.voterSet.Get(n.id)
		local := n.localVoter()
		needsUpdate := named && self.matches(local.ID, local.DirectoryID) && !self.equal(local)
		if !ok || offset == -1 || needsUpdate {
			recs = append(recs,
				controlRecord(&metadata.KRaftVersionRecord{KRaftVersion: kv}),
				controlRecord(votersRecord(n.voterSet.with(local))))
		}
	}
	return batch.Builder{BaseOffset: n.endOffset, LeaderEpoch: n.epoch, Timestamp: n.now, Control: true}.Encode(nil, recs)
}

// votersBatch is a control batch of one VotersRecord, a voter change.
func votersBatch(base int64, epoch int32, now int64, set VoterSet) []byte {
	return batch.Builder{BaseOffset: base, LeaderEpoch: epoch, Timestamp: now, Control: true}.Encode(nil, []batch.Record{controlRecord(votersRecord(set))})
}

// ControlType returns the control record type of a control record key, or
// -1 when the key is not a control key. Keys are read as Apache reads them
// (metadata.ParseControlKey): a key version above 0 is read as version 0.
func ControlType(key []byte) int16 {
	typ, err := metadata.ParseControlKey(key)
	if err != nil {
		return -1
	}
	return typ
}
