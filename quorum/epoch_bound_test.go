package quorum_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage/batch"
)

// The tests in this file send the epochs at the top of int32 that a forged
// request can carry (issue 11, defect 1). An epoch of math.MaxInt32 left a
// node unable to stand for election: its candidacy overflowed to
// math.MinInt32, and every node that had persisted the epoch looped
// Prospective → Candidate → Unattached for good.

func threeVoters() map[int32][]quorum.Endpoint {
	v := map[int32][]quorum.Endpoint{}
	for id := int32(1); id <= 3; id++ {
		v[id] = []quorum.Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(9090 + id)}}
	}
	return v
}

// followerAt5 is node 2 following node 1 in epoch 5, over ten records of
// epoch 5.
func followerAt5(t *testing.T) *quorum.Node {
	t.Helper()
	n, err := quorum.New(quorum.Config{
		NodeID: 2, DirectoryID: [16]byte{2}, ClusterID: "c", Voters: threeVoters(),
		Rand:      rand.New(rand.NewPCG(1, 2)),
		HardState: quorum.HardState{LeaderID: 1, LeaderEpoch: 5, VotedID: -1},
		Log:       &shapedLog{start: 0, end: 10, epochs: []epochStart{{5, 0}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// stepAndDrain steps m and applies every Ready that follows. It returns
// the messages sent and the HardStates the node asked to persist.
func stepAndDrain(t *testing.T, n *quorum.Node, m quorum.Message) ([]quorum.Message, []quorum.HardState) {
	t.Helper()
	if err := n.Step(m); err != nil {
		t.Fatal(err)
	}
	return drainAll(n)
}

func drainAll(n *quorum.Node) ([]quorum.Message, []quorum.HardState) {
	var msgs []quorum.Message
	var hss []quorum.HardState
	for n.HasReady() {
		rd := n.Ready()
		msgs = append(msgs, rd.Messages...)
		if rd.HardState != nil {
			hss = append(hss, *rd.HardState)
		}
		n.Advance()
	}
	return msgs, hss
}

// answerCode is the error code of the answer to request 1 in msgs: the
// top-level code if set, else the partition's; -2 if there is no answer.
func answerCode(msgs []quorum.Message) int16 {
	for _, m := range msgs {
		if m.ReqID != 1 || m.Response == nil {
			continue
		}
		switch r := m.Response.(type) {
		case *kmsg.VoteResponse:
			if r.ErrorCode != 0 || len(r.Topics) == 0 {
				return r.ErrorCode
			}
			return r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.BeginQuorumEpochResponse:
			if r.ErrorCode != 0 || len(r.Topics) == 0 {
				return r.ErrorCode
			}
			return r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.EndQuorumEpochResponse:
			if r.ErrorCode != 0 || len(r.Topics) == 0 {
				return r.ErrorCode
			}
			return r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.FetchResponse:
			if r.ErrorCode != 0 || len(r.Topics) == 0 {
				return r.ErrorCode
			}
			return r.Topics[0].Partitions[0].ErrorCode
		case *kmsg.FetchSnapshotResponse:
			if r.ErrorCode != 0 || len(r.Topics) == 0 {
				return r.ErrorCode
			}
			return r.Topics[0].Partitions[0].ErrorCode
		}
	}
	return -2
}

func beginQuorumAt(leader, epoch int32) *kmsg.BeginQuorumEpochRequest {
	r := kmsg.NewPtrBeginQuorumEpochRequest()
	r.Version, r.VoterID = 1, 2
	cluster := "c"
	r.ClusterID = &cluster
	p := kmsg.NewBeginQuorumEpochRequestTopicPartition()
	p.LeaderID, p.LeaderEpoch = leader, epoch
	r.Topics = []kmsg.BeginQuorumEpochRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.BeginQuorumEpochRequestTopicPartition{p}}}
	return r
}

func endQuorumAt(leader, epoch int32) *kmsg.EndQuorumEpochRequest {
	r := kmsg.NewPtrEndQuorumEpochRequest()
	r.Version = 1
	cluster := "c"
	r.ClusterID = &cluster
	p := kmsg.NewEndQuorumEpochRequestTopicPartition()
	p.LeaderID, p.LeaderEpoch = leader, epoch
	r.Topics = []kmsg.EndQuorumEpochRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.EndQuorumEpochRequestTopicPartition{p}}}
	return r
}

func voteAt(candidate, epoch int32, lastOffset int64, lastEpoch int32, preVote bool) *kmsg.VoteRequest {
	r := kmsg.NewPtrVoteRequest()
	r.Version, r.VoterID = 2, 2
	cluster := "c"
	r.ClusterID = &cluster
	p := kmsg.NewVoteRequestTopicPartition()
	p.CandidateID, p.CandidateEpoch = candidate, epoch
	p.LastOffset, p.LastOffsetEpoch, p.PreVote = lastOffset, lastEpoch, preVote
	r.Topics = []kmsg.VoteRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.VoteRequestTopicPartition{p}}}
	return r
}

func fetchAt(epoch int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.ReplicaState.ID = 18, 9
	cluster := "c"
	r.ClusterID = &cluster
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = epoch, 10, 5
	r.Topics = []kmsg.FetchRequestTopic{{Topic: quorum.MetadataTopic, TopicID: quorum.MetadataTopicID, Partitions: []kmsg.FetchRequestTopicPartition{p}}}
	return r
}

func fetchSnapshotAt(epoch int32) *kmsg.FetchSnapshotRequest {
	r := kmsg.NewPtrFetchSnapshotRequest()
	r.Version, r.ReplicaID = 1, 9
	cluster := "c"
	r.ClusterID = &cluster
	p := kmsg.NewFetchSnapshotRequestTopicPartition()
	p.CurrentLeaderEpoch = epoch
	p.SnapshotID.EndOffset, p.SnapshotID.Epoch = 10, 5
	r.Topics = []kmsg.FetchSnapshotRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.FetchSnapshotRequestTopicPartition{p}}}
	return r
}

// TestRequestAtMaxEpochIsRefused: a request whose epoch leaves no room to
// stand again (math.MaxInt32: a candidacy needs epoch+1) is answered
// INVALID_REQUEST and moves nothing: no epoch, no role, no quorum-state.
func TestRequestAtMaxEpochIsRefused(t *testing.T) {
	const top = math.MaxInt32
	cases := []struct {
		name string
		req  kmsg.Request
	}{
		{"BeginQuorumEpoch", beginQuorumAt(3, top)},
		{"EndQuorumEpoch", endQuorumAt(3, top)},
		{"Vote", voteAt(3, top, 10, 5, false)},
		{"Vote from a non-voter", voteAt(99, top, 10, 5, false)},
		{"PreVote", voteAt(3, top, 10, 5, true)},
		{"Fetch", fetchAt(top)},
		{"FetchSnapshot", fetchSnapshotAt(top)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := followerAt5(t)
			drainAll(n)
			msgs, hss := stepAndDrain(t, n, quorum.Message{From: 3, To: 2, ReqID: 1, Request: c.req})
			if code := answerCode(msgs); code != 42 {
				t.Errorf("answer error code %d, want 42 (INVALID_REQUEST)", code)
			}
			if s := n.Status(); s.Epoch != 5 || s.Role != quorum.RoleFollower || s.LeaderID != 1 {
				t.Errorf("node moved to %v epoch %d leader %d, want Follower epoch 5 leader 1", s.Role, s.Epoch, s.LeaderID)
			}
			if len(hss) > 0 {
				t.Errorf("node persisted %+v", hss)
			}
		})
	}
}

// TestRequestMovesEpochAtMostTwo: a request moves a node at most two
// epochs (issue 34); one naming a later epoch, up to math.MaxInt32-1, is
// answered UNKNOWN_LEADER_EPOCH with the node's own epoch and changes
// nothing, whichever voter it names.
func TestRequestMovesEpochAtMostTwo(t *testing.T) {
	for _, epoch := range []int32{6, 7} {
		n := followerAt5(t)
		drainAll(n)
		msgs, hss := stepAndDrain(t, n, quorum.Message{From: 3, To: 2, ReqID: 1, Request: beginQuorumAt(3, epoch)})
		if code := answerCode(msgs); code != 0 {
			t.Fatalf("epoch %d: answer error code %d, want 0", epoch, code)
		}
		if s := n.Status(); s.Epoch != epoch || s.LeaderID != 3 || len(hss) == 0 {
			t.Fatalf("epoch %d: status %+v, persisted %+v; want following 3 in epoch %d", epoch, s, hss, epoch)
		}
	}
	for _, epoch := range []int32{8, 1000, 1 << 30, math.MaxInt32 - 2, math.MaxInt32 - 1} {
		for _, req := range []kmsg.Request{beginQuorumAt(3, epoch), endQuorumAt(3, epoch), voteAt(3, epoch, 10, 5, false), voteAt(3, epoch-1, 10, 5, true)} {
			n := followerAt5(t)
			drainAll(n)
			msgs, hss := stepAndDrain(t, n, quorum.Message{From: 3, To: 2, ReqID: 1, Request: req})
			want := int16(75) // UNKNOWN_LEADER_EPOCH
			if _, ok := req.(*kmsg.VoteRequest); ok {
				want = 0 // a plain refusal
			}
			if code := answerCode(msgs); code != want {
				t.Errorf("%T at %d: answer error code %d, want %d", req, epoch, code, want)
			}
			if s := n.Status(); s.Epoch != 5 || s.LeaderID != 1 || len(hss) > 0 {
				t.Errorf("%T at %d: status %+v, persisted %+v; want following 1 in epoch 5", req, epoch, s, hss)
			}
		}
	}
}

// followerFetch ticks the follower until it fetches from its leader and
// returns that Fetch.
func followerFetch(t *testing.T, n *quorum.Node) quorum.Message {
	t.Helper()
	for now := int64(1); now < 1000; now += 10 {
		n.Tick(now)
		msgs, _ := drainAll(n)
		for _, m := range msgs {
			if _, ok := m.Request.(*kmsg.FetchRequest); ok && m.To == 1 {
				return m
			}
		}
	}
	t.Fatal("the follower sent no Fetch")
	return quorum.Message{}
}

// fetchAnswer is a Fetch answer from the leader with no error.
func fetchAnswer(req quorum.Message, leader, epoch int32) quorum.Message {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = req.Request.GetVersion()
	p := kmsg.NewFetchResponseTopicPartition()
	p.HighWatermark = 10
	p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = leader, epoch
	resp.Topics = []kmsg.FetchResponseTopic{{Topic: quorum.MetadataTopic, TopicID: quorum.MetadataTopicID, Partitions: []kmsg.FetchResponseTopicPartition{p}}}
	return quorum.Message{From: req.To, To: req.From, ReqID: req.ReqID, Response: resp}
}

// TestAnswerAtMaxEpochIsDropped: an answer naming epoch math.MaxInt32 (here
// a Fetch answer that claims a new leader) is dropped, not taken.
func TestAnswerAtMaxEpochIsDropped(t *testing.T) {
	n := followerAt5(t)
	req := followerFetch(t, n)
	_, hss := stepAndDrain(t, n, fetchAnswer(req, 3, math.MaxInt32))
	if s := n.Status(); s.Epoch != 5 || s.LeaderID != 1 || len(hss) > 0 {
		t.Fatalf("status %+v, persisted %+v; want following 1 in epoch 5, nothing persisted", s, hss)
	}
}

// TestFetchedBatchAboveLeaderEpochIsDropped: the leader of epoch 5 cannot
// have written a batch of a later epoch; a follower that appended one would
// take that epoch from its log on restart.
func TestFetchedBatchAboveLeaderEpochIsDropped(t *testing.T) {
	n := followerAt5(t)
	req := followerFetch(t, n)
	ans := fetchAnswer(req, 1, 5)
	rp := &ans.Response.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	rp.RecordBatches = batch.Builder{BaseOffset: 10, LeaderEpoch: math.MaxInt32}.Encode(nil, []batch.Record{{Value: []byte("x")}})
	if err := n.Step(ans); err != nil {
		t.Fatal(err)
	}
	for n.HasReady() {
		rd := n.Ready()
		if len(rd.Append) > 0 {
			t.Fatalf("the follower appended a batch of epoch %d in epoch 5", int32(math.MaxInt32))
		}
		n.Advance()
	}
	if s := n.Status(); s.EndOffset != 10 || s.LastEpoch != 5 {
		t.Fatalf("log end %d@%d, want 10@5", s.EndOffset, s.LastEpoch)
	}
}

// singleVoterAt starts node 1, the only voter, from quorum-state hs over an
// empty log and ticks it for 20 s of elections. It returns every epoch the
// node was in.
func singleVoterAt(t *testing.T, hs quorum.HardState) (*quorum.Node, []int32) {
	t.Helper()
	n, err := quorum.New(quorum.Config{
		NodeID: 1, DirectoryID: [16]byte{1}, ClusterID: "c",
		Voters: map[int32][]quorum.Endpoint{1: {{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093}}},
		Rand:   rand.New(rand.NewPCG(1, 2)), HardState: hs, Log: &shapedLog{},
	})
	if err != nil {
		t.Fatal(err)
	}
	epochs := []int32{n.Status().Epoch}
	for now := int64(0); now <= 20000; now += 100 {
		n.Tick(now)
		drainAll(n)
		if e := n.Status().Epoch; e != epochs[len(epochs)-1] {
			epochs = append(epochs, e)
		}
	}
	return n, epochs
}

// TestNoCandidacyPastMaxInt32: a node never stands for an epoch that
// overflows. Quorum-state at math.MaxInt32 (written by an earlier version
// that took a forged epoch) leaves a single voter where it is, instead of
// electing itself at math.MinInt32 (whose first batch storage refuses).
func TestNoCandidacyPastMaxInt32(t *testing.T) {
	for _, hs := range []quorum.HardState{
		{LeaderID: -1, LeaderEpoch: math.MaxInt32, VotedID: -1}, // Unattached
		{LeaderID: 1, LeaderEpoch: math.MaxInt32, VotedID: 1},   // restarted leader: Resigned
		{LeaderID: -1, LeaderEpoch: math.MaxInt32, VotedID: 1},  // restarted candidate
	} {
		_, epochs := singleVoterAt(t, hs)
		if len(epochs) != 1 {
			t.Errorf("from %+v the node went through epochs %v", hs, epochs)
		}
	}
	// One below, the node can still stand once, and leads the last epoch.
	n, epochs := singleVoterAt(t, quorum.HardState{LeaderID: -1, LeaderEpoch: math.MaxInt32 - 1, VotedID: -1})
	if s := n.Status(); s.Role != quorum.RoleLeader || s.Epoch != math.MaxInt32 || len(epochs) != 2 {
		t.Errorf("from MaxInt32-1: %v epoch %d via %v, want Leader of MaxInt32", s.Role, s.Epoch, epochs)
	}
}

// TestFetchedSnapshotAboveLeaderEpochIsIgnored: a snapshot id (or a
// diverging epoch) of a later epoch than the leader's is not followed; a
// downloaded snapshot's epoch would become the log's last epoch.
func TestFetchedSnapshotAboveLeaderEpochIsIgnored(t *testing.T) {
	n := followerAt5(t)
	req := followerFetch(t, n)
	ans := fetchAnswer(req, 1, 5)
	rp := &ans.Response.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = 20, math.MaxInt32
	msgs, _ := stepAndDrain(t, n, ans)
	for now := int64(1000); now < 1500; now += 10 {
		n.Tick(now)
		more, _ := drainAll(n)
		msgs = append(msgs, more...)
	}
	for _, m := range msgs {
		if _, ok := m.Request.(*kmsg.FetchSnapshotRequest); ok {
			t.Fatalf("the follower downloads snapshot 20@%d from the leader of epoch 5", int32(math.MaxInt32))
		}
	}
}
