package quorum

import (
	"encoding/binary"
	"errors"

	"github.com/kraftd/kraftd/storage/batch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Control record types (Apache's ControlRecordType ids).
const (
	controlLeaderChange int16 = 2
	controlKRaftVersion int16 = 5
	controlVoters       int16 = 6
)

// controlKey is the 4-byte key of a control record: int16 version 0, int16 type.
func controlKey(typ int16) []byte {
	k := kmsg.ControlRecordKey{Version: 0, Type: kmsg.ControlRecordKeyType(typ)}
	return k.AppendTo(nil)
}

// VoterRecord is one voter of a VotersRecord control record.
type VoterRecord struct {
	ID          int32
	DirectoryID [16]byte
	Endpoints   []Endpoint
	MinKRaft    int16
	MaxKRaft    int16
}

// leaderChangeValue encodes LeaderChangeMessage at version 0, as Apache
// writes it at the start of each epoch.
func leaderChangeValue(leader int32, voters, granting []int32) []byte {
	m := kmsg.LeaderChangeMessage{Version: 0, LeaderID: leader}
	for _, v := range voters {
		m.Voters = append(m.Voters, kmsg.LeaderChangeMessageVoter{VoterID: v})
	}
	for _, v := range granting {
		m.GrantingVoters = append(m.GrantingVoters, kmsg.LeaderChangeMessageVoter{VoterID: v})
	}
	return m.AppendTo(nil)
}

// kraftVersionValue encodes KRaftVersionRecord v0 {Version, KRaftVersion}
// (flexible: an empty tagged-field section ends it). kmsg lacks this type.
func kraftVersionValue(level int16) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(level))
	return append(b, 0)
}

// votersValue encodes VotersRecord v0, a flexible message kmsg lacks.
func votersValue(voters []VoterRecord) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.AppendUvarint(b, uint64(len(voters)+1))
	for _, v := range voters {
		b = binary.BigEndian.AppendUint32(b, uint32(v.ID))
		b = append(b, v.DirectoryID[:]...)
		b = binary.AppendUvarint(b, uint64(len(v.Endpoints)+1))
		for _, e := range v.Endpoints {
			b = appendCompactString(b, e.Name)
			b = appendCompactString(b, e.Host)
			b = binary.BigEndian.AppendUint16(b, e.Port)
			b = append(b, 0)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(v.MinKRaft))
		b = binary.BigEndian.AppendUint16(b, uint16(v.MaxKRaft))
		b = append(b, 0) // feature struct tags
		b = append(b, 0) // voter tags
	}
	return append(b, 0)
}

func appendCompactString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)+1))
	return append(b, s...)
}

var errShortControl = errors.New("quorum: short control record")

// parseVotersValue decodes a VotersRecord v0 value. Tagged fields are skipped.
func parseVotersValue(b []byte) ([]VoterRecord, error) {
	r := controlReader{b: b}
	if r.int16() != 0 {
		return nil, errors.New("quorum: unknown VotersRecord version")
	}
	n := r.uvarint() - 1
	var out []VoterRecord
	for i := uint64(0); i < n && r.ok(); i++ {
		var v VoterRecord
		v.ID = int32(r.uint32())
		copy(v.DirectoryID[:], r.bytes(16))
		ne := r.uvarint() - 1
		for j := uint64(0); j < ne && r.ok(); j++ {
			var e Endpoint
			e.Name = r.compactString()
			e.Host = r.compactString()
			e.Port = uint16(r.int16())
			r.skipTags()
			v.Endpoints = append(v.Endpoints, e)
		}
		v.MinKRaft = r.int16()
		v.MaxKRaft = r.int16()
		r.skipTags()
		r.skipTags()
		out = append(out, v)
	}
	r.skipTags()
	if !r.ok() {
		return nil, errShortControl
	}
	return out, nil
}

// controlReader is a sticky-error reader: after an underflow every read
// returns zero and ok reports false.
type controlReader struct {
	b   []byte
	bad bool
}

func (r *controlReader) ok() bool { return !r.bad }

func (r *controlReader) bytes(n int) []byte {
	if r.bad || n < 0 || len(r.b) < n {
		r.bad = true
		return make([]byte, max(n, 0))
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *controlReader) int16() int16   { return int16(binary.BigEndian.Uint16(r.bytes(2))) }
func (r *controlReader) uint32() uint32 { return binary.BigEndian.Uint32(r.bytes(4)) }

func (r *controlReader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *controlReader) compactString() string {
	n := int(r.uvarint()) - 1
	return string(r.bytes(n))
}

func (r *controlReader) skipTags() {
	n := r.uvarint()
	for i := uint64(0); i < n && !r.bad; i++ {
		r.uvarint()
		r.bytes(int(r.uvarint()))
	}
}

// startOfEpochBatch builds the control batch a new leader appends first:
// LeaderChange, then KRaftVersion and Voters when kraft.version >= 1.
func startOfEpochBatch(base int64, epoch int32, now int64, leader int32, voters, granting []int32, kraftVersion int16, voterRecords []VoterRecord) []byte {
	recs := []batch.Record{{Key: controlKey(controlLeaderChange), Value: leaderChangeValue(leader, voters, granting)}}
	if kraftVersion >= 1 {
		recs = append(recs,
			batch.Record{Key: controlKey(controlKRaftVersion), Value: kraftVersionValue(kraftVersion)},
			batch.Record{Key: controlKey(controlVoters), Value: votersValue(voterRecords)})
	}
	return batch.Builder{BaseOffset: base, LeaderEpoch: epoch, Timestamp: now, Control: true}.Encode(nil, recs)
}

// ControlType returns the control record type of a control record key, or
// -1 when the key is not a control key.
func ControlType(key []byte) int16 {
	var k kmsg.ControlRecordKey
	if len(key) != 4 || k.ReadFrom(key) != nil || k.Version != 0 {
		return -1
	}
	return int16(k.Type)
}
