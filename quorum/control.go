package quorum

import (
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

// Control records are encoded by package metadata's generated codec, the
// one that also reads them back from snapshots and the log; quorum only
// chooses what goes in them.

// VoterRecord is one voter of a VotersRecord control record.
type VoterRecord struct {
	ID          int32
	DirectoryID [16]byte
	Endpoints   []Endpoint
	MinKRaft    int16
	MaxKRaft    int16
}

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

// votersRecord is the VotersRecord v0 listing voters.
func votersRecord(voters []VoterRecord) *metadata.VotersRecord {
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

// startOfEpochBatch builds the control batch a new leader appends first:
// LeaderChange, then KRaftVersion and Voters when kraft.version >= 1.
func startOfEpochBatch(base int64, epoch int32, now int64, leader int32, voters, granting []int32, kraftVersion int16, voterRecords []VoterRecord) []byte {
	recs := []batch.Record{controlRecord(leaderChange(leader, voters, granting))}
	if kraftVersion >= 1 {
		recs = append(recs,
			controlRecord(&metadata.KRaftVersionRecord{KRaftVersion: kraftVersion}),
			controlRecord(votersRecord(voterRecords)))
	}
	return batch.Builder{BaseOffset: base, LeaderEpoch: epoch, Timestamp: now, Control: true}.Encode(nil, recs)
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
