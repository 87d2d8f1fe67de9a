package quorum_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node/nodetest"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage/batch"
)

// send steps one hand-made request into a node and prints its direct
// answer, then what it made durable; whatever else the node sends is
// queued for stabilize.
// Example: send fetch to=1 from=9 epoch=1 offset=0 last-epoch=0
//
//	send vote to=2 from=9 epoch=3 last=0@0 pre voter=2
func (e *interactionEnv) send(t *testing.T, c testCmd) {
	to := parseIDs(c.arg("to", "1"))[0]
	from := parseIDs(c.arg("from", "9"))[0]
	var req kmsg.Request
	switch c.args[0] {
	case "fetch":
		req = handFetch(c, from)
	case "vote":
		req = handVote(c, from, to)
	default:
		t.Fatalf("%s: unknown request %q", c.pos, c.args[0])
	}
	n := e.nodes[to]
	n.Inbound(req, func(resp kmsg.Response) {
		e.printf("%s\n", describeMessage(quorum.Message{From: to, To: from, Response: resp}))
	})
	e.processNode(n, true)
}

// num is the integer argument k, or def.
func num(c testCmd, k string, def int64) int64 {
	v, _ := strconv.ParseInt(c.arg(k, strconv.FormatInt(def, 10)), 10, 64)
	return v
}

func handFetch(c testCmd, from int32) *kmsg.FetchRequest {
	cluster := c.arg("cluster", clusterID)
	r := kmsg.NewPtrFetchRequest()
	r.Version = int16(num(c, "version", 18))
	r.ClusterID = &cluster
	r.ReplicaID, r.ReplicaState.ID = from, from
	r.MaxWaitMillis = int32(num(c, "maxwait", 0))
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch = int32(num(c, "epoch", 0))
	p.FetchOffset = num(c, "offset", 0)
	p.LastFetchedEpoch = int32(num(c, "last-epoch", 0))
	tp := kmsg.NewFetchRequestTopic()
	tp.Topic, tp.TopicID = quorum.MetadataTopic, quorum.MetadataTopicID
	if c.has("bad-topic") {
		tp.TopicID = [16]byte{1}
	}
	tp.Partitions = []kmsg.FetchRequestTopicPartition{p}
	r.Topics = []kmsg.FetchRequestTopic{tp}
	return r
}

func handVote(c testCmd, from, to int32) *kmsg.VoteRequest {
	cluster := c.arg("cluster", clusterID)
	r := kmsg.NewPtrVoteRequest()
	r.Version = int16(num(c, "version", 2))
	r.ClusterID = &cluster
	r.VoterID = int32(num(c, "voter", int64(to)))
	p := kmsg.NewVoteRequestTopicPartition()
	p.CandidateEpoch = int32(num(c, "epoch", 0))
	p.CandidateID = int32(num(c, "candidate", int64(from)))
	off, ep, _ := strings.Cut(c.arg("last", "0@0"), "@")
	lo, _ := strconv.ParseInt(off, 10, 64)
	le, _ := strconv.ParseInt(ep, 10, 32)
	p.LastOffset, p.LastOffsetEpoch = lo, int32(le)
	p.PreVote = c.has("pre")
	tp := kmsg.NewVoteRequestTopic()
	tp.Topic = quorum.MetadataTopic
	tp.Partitions = []kmsg.VoteRequestTopicPartition{p}
	r.Topics = []kmsg.VoteRequestTopic{tp}
	return r
}

// describe asks a node for DescribeQuorum and prints the answer.
// Example: describe 1
func (e *interactionEnv) describe(_ *testing.T, c testCmd) {
	n := e.node(c)
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	tp := kmsg.NewDescribeQuorumRequestTopic()
	tp.Topic = quorum.MetadataTopic
	tp.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{tp}
	n.Inbound(req, func(resp kmsg.Response) {
		if r, ok := resp.(*kmsg.DescribeQuorumResponse); ok {
			e.describeQuorum(r)
		}
	})
	e.processNode(n, false)
}

// describeBatch renders a batch as [base-last@epoch values] with control
// records named by type and proposed values as they were proposed.
func describeBatch(raw []byte) string {
	b, err := batch.Decode(raw)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	var vals []string
	for _, r := range b.Records {
		if b.IsControl() {
			switch quorum.ControlType(r.Key) {
			case 2:
				vals = append(vals, "LeaderChange")
			case 5:
				vals = append(vals, "KRaftVersion")
			case 6:
				vals = append(vals, "Voters")
			default:
				vals = append(vals, "control?")
			}
			continue
		}
		vals = append(vals, describeRecord(r.Value))
	}
	return fmt.Sprintf("[%d-%d@%d %s]", b.BaseOffset, b.LastOffset(), b.PartitionLeaderEpoch, strings.Join(vals, ","))
}

// describeRecord names a data record: a proposed value by the value, any
// other record by its type.
func describeRecord(value []byte) string {
	rec, err := metadata.DecodeValue(value)
	switch r := rec.(type) {
	case nil:
		return fmt.Sprintf("<%v>", err)
	case *metadata.ConfigRecord:
		return r.Name
	case *metadata.NoOpRecord:
		return "NoOp"
	default:
		return fmt.Sprintf("%T", r)
	}
}

func describeBatches(raw []byte) string {
	var parts []string
	_, _ = batch.Walk(raw, func(_ batch.Header, b []byte) error {
		parts = append(parts, describeBatch(b))
		return nil
	})
	return strings.Join(parts, "")
}

func describeMessage(m quorum.Message) string {
	head := fmt.Sprintf("%d->%d", m.From, m.To)
	switch r := m.Request.(type) {
	case *kmsg.VoteRequest:
		p := r.Topics[0].Partitions[0]
		kind := "Vote"
		if p.PreVote {
			kind = "PreVote"
		}
		return fmt.Sprintf("%s %s v%d epoch=%d last=%d@%d", head, kind, r.Version, p.CandidateEpoch, p.LastOffset, p.LastOffsetEpoch)
	case *kmsg.BeginQuorumEpochRequest:
		p := r.Topics[0].Partitions[0]
		return fmt.Sprintf("%s BeginQuorumEpoch leader=%d epoch=%d", head, p.LeaderID, p.LeaderEpoch)
	case *kmsg.EndQuorumEpochRequest:
		p := r.Topics[0].Partitions[0]
		var pref []int32
		for _, c := range p.PreferredCandidates {
			pref = append(pref, c.CandidateID)
		}
		return fmt.Sprintf("%s EndQuorumEpoch leader=%d epoch=%d preferred=%v", head, p.LeaderID, p.LeaderEpoch, pref)
	case *kmsg.FetchRequest:
		p := r.Topics[0].Partitions[0]
		return fmt.Sprintf("%s Fetch epoch=%d offset=%d lastEpoch=%d hw=%d", head, p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch, p.HighWatermark)
	case *kmsg.FetchSnapshotRequest:
		p := r.Topics[0].Partitions[0]
		return fmt.Sprintf("%s FetchSnapshot epoch=%d id=%d@%d pos=%d", head, p.CurrentLeaderEpoch, p.SnapshotID.EndOffset, p.SnapshotID.Epoch, p.Position)
	case *kmsg.ApiVersionsRequest:
		return fmt.Sprintf("%s ApiVersions v%d", head, r.Version)
	case *kmsg.UpdateRaftVoterRequest:
		return fmt.Sprintf("%s UpdateRaftVoter epoch=%d voter=%d port=%d kraft=%d-%d", head, r.CurrentLeaderEpoch, r.VoterID,
			r.Listeners[0].Port, r.KRaftVersionFeature.MinSupportedVersion, r.KRaftVersionFeature.MaxSupportedVersion)
	case *kmsg.AddRaftVoterRequest:
		return fmt.Sprintf("%s AddRaftVoter v%d voter=%d dir=%s ack=%t", head, r.Version, r.VoterID, dirName(r.VoterID, r.VoterDirectoryID), r.AckWhenCommitted)
	case *kmsg.RemoveRaftVoterRequest:
		return fmt.Sprintf("%s RemoveRaftVoter voter=%d dir=%s", head, r.VoterID, dirName(r.VoterID, r.VoterDirectoryID))
	}
	if m.Err != nil {
		return fmt.Sprintf("%s failed: %v", head, m.Err)
	}
	switch r := m.Response.(type) {
	case *kmsg.AddRaftVoterResponse:
		return fmt.Sprintf("%s AddRaftVoterResponse err=%d", head, r.ErrorCode)
	case *kmsg.RemoveRaftVoterResponse:
		return fmt.Sprintf("%s RemoveRaftVoterResponse err=%d", head, r.ErrorCode)
	case *kmsg.UpdateRaftVoterResponse:
		return fmt.Sprintf("%s UpdateRaftVoterResponse err=%d leader=%d epoch=%d", head, r.ErrorCode, r.CurrentLeader.LeaderID, r.CurrentLeader.LeaderEpoch)
	case *kmsg.ApiVersionsResponse:
		for _, f := range r.SupportedFeatures {
			if f.Name == "kraft.version" {
				return fmt.Sprintf("%s ApiVersionsResponse err=%d kraft.version=%d-%d", head, r.ErrorCode, f.MinVersion, f.MaxVersion)
			}
		}
		return fmt.Sprintf("%s ApiVersionsResponse err=%d", head, r.ErrorCode)
	case *kmsg.VoteResponse:
		if len(r.Topics) == 0 {
			return fmt.Sprintf("%s VoteResponse err=%d", head, r.ErrorCode)
		}
		p := r.Topics[0].Partitions[0]
		return fmt.Sprintf("%s VoteResponse err=%d leader=%d epoch=%d granted=%t", head, p.ErrorCode, p.LeaderID, p.LeaderEpoch, p.VoteGranted)
	case *kmsg.BeginQuorumEpochResponse:
		p := r.Topics[0].Partitions[0]
		return fmt.Sprintf("%s BeginQuorumEpochResponse err=%d leader=%d epoch=%d", head, p.ErrorCode, p.LeaderID, p.LeaderEpoch)
	case *kmsg.EndQuorumEpochResponse:
		p := r.Topics[0].Partitions[0]
		return fmt.Sprintf("%s EndQuorumEpochResponse err=%d leader=%d epoch=%d", head, p.ErrorCode, p.LeaderID, p.LeaderEpoch)
	case *kmsg.FetchResponse:
		if len(r.Topics) == 0 {
			return fmt.Sprintf("%s FetchResponse err=%d", head, r.ErrorCode)
		}
		p := r.Topics[0].Partitions[0]
		s := fmt.Sprintf("%s FetchResponse err=%d leader=%d epoch=%d hw=%d", head, p.ErrorCode, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, p.HighWatermark)
		if p.DivergingEpoch.Epoch >= 0 {
			s += fmt.Sprintf(" diverging=%d@%d", p.DivergingEpoch.EndOffset, p.DivergingEpoch.Epoch)
		}
		if p.SnapshotID.Epoch >= 0 {
			s += fmt.Sprintf(" snapshot=%d@%d", p.SnapshotID.EndOffset, p.SnapshotID.Epoch)
		}
		if len(p.RecordBatches) > 0 {
			s += " " + describeBatches(p.RecordBatches)
		}
		return s
	case *kmsg.FetchSnapshotResponse:
		p := r.Topics[0].Partitions[0]
		return fmt.Sprintf("%s FetchSnapshotResponse err=%d id=%d@%d pos=%d size=%d bytes=%d", head, p.ErrorCode, p.SnapshotID.EndOffset, p.SnapshotID.Epoch, p.Position, p.Size, len(p.Bytes))
	}
	return head + " ?"
}

func (e *interactionEnv) describeQuorum(r *kmsg.DescribeQuorumResponse) {
	p := r.Topics[0].Partitions[0]
	e.printf("err=%d leader=%d epoch=%d hw=%d\n", p.ErrorCode, p.LeaderID, p.LeaderEpoch, p.HighWatermark)
	for _, v := range p.CurrentVoters {
		e.printf("  voter %d leo=%d lastFetch=%d caughtUp=%d\n", v.ReplicaID, v.LogEndOffset, v.LastFetchTimestamp, v.LastCaughtUpTimestamp)
	}
	for _, v := range p.Observers {
		e.printf("  observer %d leo=%d lastFetch=%d caughtUp=%d\n", v.ReplicaID, v.LogEndOffset, v.LastFetchTimestamp, v.LastCaughtUpTimestamp)
	}
	for _, n := range r.Nodes {
		e.printf("  node %d %s:%d\n", n.NodeID, n.Listeners[0].Host, n.Listeners[0].Port)
	}
}

// dirName names a directory id as voterKey reads it: N for the one node id
// has after its N-th format (0 the first).
func dirName(id int32, dir [16]byte) string {
	for formats := 0; formats < 8; formats++ {
		if nodetest.ReformattedDirectoryID(id, formats) == dir {
			return strconv.Itoa(formats)
		}
	}
	return fmt.Sprintf("%x", dir)
}
