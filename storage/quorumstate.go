package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/kraftd/kraftd/storage/uuid"
)

// QuorumStateName is the quorum-state file in the metadata partition dir.
const QuorumStateName = "quorum-state"

// QuorumState is the durable election state, Apache's QuorumStateData plus
// its data_version (0 when kraft.version is 0, 1 when it is 1).
type QuorumState struct {
	LeaderID         int32 // -1: no known leader
	LeaderEpoch      int32
	VotedID          int32 // -1: no vote in this epoch
	VotedDirectoryID uuid.UUID
	CurrentVoters    []int32 // data_version 0 only
	DataVersion      int16
}

// EncodeQuorumState renders qs as FileQuorumStateStore writes it: the fields
// of QuorumStateData valid in DataVersion, in schema order (Apache's
// generated JSON converter writes every non-tagged field, defaults
// included), then "data_version", as compact JSON with no final newline.
func EncodeQuorumState(qs QuorumState) ([]byte, error) {
	var b bytes.Buffer
	i32 := func(name string, v int32) {
		b.WriteString(`"` + name + `":` + strconv.FormatInt(int64(v), 10) + ",")
	}
	b.WriteByte('{')
	switch qs.DataVersion {
	case 0:
		if qs.VotedDirectoryID != uuid.Zero {
			return nil, errors.New("storage: quorum-state data_version 0 cannot hold a voted directory id")
		}
		b.WriteString(`"clusterId":"",`)
		i32("leaderId", qs.LeaderID)
		i32("leaderEpoch", qs.LeaderEpoch)
		i32("votedId", qs.VotedID)
		b.WriteString(`"appliedOffset":0,"currentVoters":[`)
		for i, v := range qs.CurrentVoters {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"voterId":` + strconv.FormatInt(int64(v), 10) + "}")
		}
		b.WriteString(`],`)
	case 1:
		if len(qs.CurrentVoters) > 0 {
			return nil, errors.New("storage: quorum-state data_version 1 cannot hold current voters")
		}
		i32("leaderId", qs.LeaderID)
		i32("leaderEpoch", qs.LeaderEpoch)
		i32("votedId", qs.VotedID)
		b.WriteString(`"votedDirectoryId":"` + qs.VotedDirectoryID.String() + `",`)
	default:
		return nil, fmt.Errorf("storage: quorum-state data_version %d not in 0-1", qs.DataVersion)
	}
	b.WriteString(`"data_version":` + strconv.Itoa(int(qs.DataVersion)) + "}")
	return b.Bytes(), nil
}

// ParseQuorumState reads the first line of a quorum-state file. Like
// Apache's converter, every field of the file's data_version must be there.
func ParseQuorumState(data []byte) (QuorumState, error) {
	var qs QuorumState
	line, _, _ := bytes.Cut(data, []byte("\n"))
	if len(bytes.TrimSpace(line)) == 0 {
		return qs, errors.New("storage: quorum-state is empty")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return qs, fmt.Errorf("storage: quorum-state is not a JSON object: %w", err)
	}
	dv, ok := obj["data_version"]
	if !ok {
		return qs, errors.New("storage: quorum-state has no data_version field")
	}
	v, err := jsonInt(dv, math.MinInt16, math.MaxInt16)
	if err != nil {
		return qs, fmt.Errorf("storage: quorum-state data_version: %w", err)
	}
	if v < 0 || v > 1 {
		return qs, fmt.Errorf("storage: quorum-state data_version %d not in 0-1", v)
	}
	qs.DataVersion = int16(v)
	field := func(name string) (json.RawMessage, error) {
		raw, ok := obj[name]
		if !ok {
			return nil, fmt.Errorf("storage: quorum-state lacks field %q, mandatory in data_version %d", name, v)
		}
		return raw, nil
	}
	for _, f := range []struct {
		name string
		dst  *int32
	}{{"leaderId", &qs.LeaderID}, {"leaderEpoch", &qs.LeaderEpoch}, {"votedId", &qs.VotedID}} {
		raw, err := field(f.name)
		if err != nil {
			return qs, err
		}
		n, err := jsonInt(raw, math.MinInt32, math.MaxInt32)
		if err != nil {
			return qs, fmt.Errorf("storage: quorum-state %s: %w", f.name, err)
		}
		*f.dst = int32(n)
	}
	if v == 1 {
		raw, err := field("votedDirectoryId")
		if err != nil {
			return qs, err
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return qs, fmt.Errorf("storage: quorum-state votedDirectoryId: %w", err)
		}
		if qs.VotedDirectoryID, err = uuid.Parse(s); err != nil {
			return qs, fmt.Errorf("storage: quorum-state votedDirectoryId: %w", err)
		}
		return qs, nil
	}
	for _, name := range []string{"clusterId", "appliedOffset"} {
		if _, err := field(name); err != nil {
			return qs, err
		}
	}
	raw, err := field("currentVoters")
	if err != nil {
		return qs, err
	}
	var voters []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &voters); err != nil {
		return qs, fmt.Errorf("storage: quorum-state currentVoters: %w", err)
	}
	for _, vo := range voters {
		id, ok := vo["voterId"]
		if !ok {
			return qs, errors.New("storage: quorum-state currentVoters entry lacks voterId")
		}
		n, err := jsonInt(id, math.MinInt32, math.MaxInt32)
		if err != nil {
			return qs, fmt.Errorf("storage: quorum-state voterId: %w", err)
		}
		qs.CurrentVoters = append(qs.CurrentVoters, int32(n))
	}
	return qs, nil
}

func jsonInt(raw json.RawMessage, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not an integer", raw)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d out of range", n)
	}
	return n, nil
}

// ReadQuorumState reads the quorum-state file at path. A missing file is
// reported with an error satisfying errors.Is(err, fs.ErrNotExist).
func ReadQuorumState(fsys FS, path string) (QuorumState, error) {
	data, err := readFile(fsys, path)
	if err != nil {
		return QuorumState{}, err
	}
	return ParseQuorumState(data)
}

// WriteQuorumState replaces the quorum-state file at path durably: write
// path.tmp, fsync, rename, fsync the directory.
func WriteQuorumState(fsys FS, path string, qs QuorumState) error {
	data, err := EncodeQuorumState(qs)
	if err != nil {
		return err
	}
	return WriteFileAtomic(fsys, path, data)
}
