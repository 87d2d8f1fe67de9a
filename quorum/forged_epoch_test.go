package quorum_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/quorum"
)

// The tests in this file check the rule of issue 34, defect 1, over the
// whole class of forged requests: no single Vote, pre-vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch or FetchSnapshot, whatever its
// epoch and whichever id it claims, leaves a healthy three-voter quorum
// without a leader for longer than an election, before or after every node
// restarts; and none moves any node's epoch more than a few past where the
// quorum stood, so no run of such requests short of billions brings the
// quorum near the end of the int32 epochs. The nodes are the production
// runtime on MemFS disks (interactionEnv), with simulated time.

// forgedLeaderlessMs bounds how long the quorum may be without a leader
// after one forged request: a follower's fetch timeout (2 s), then a
// pre-vote and an election each inside an election timeout (at most 2 s),
// with room for one split vote.
const forgedLeaderlessMs = 8000

// forgedEpochSlack is how far past its epoch before the request the quorum
// may stand once it has a leader again: the request's own step (at most
// two) and a few elections.
const forgedEpochSlack = 6

// forgedKinds are the requests forged, each built for an epoch, the id it
// claims and the leader it names, from the target's log end: a Vote claims
// a longer log, a Fetch the target's end.
var forgedKinds = []struct {
	name  string
	build func(epoch, claimed, leader int32, end int64, lastEpoch int32) kmsg.Request
}{
	{"Vote", func(e, c, _ int32, end int64, le int32) kmsg.Request { return forgedVote(e, c, end+1<<40, le, false) }},
	{"PreVote", func(e, c, _ int32, end int64, le int32) kmsg.Request { return forgedVote(e, c, end+1<<40, le, true) }},
	{"BeginQuorumEpoch", func(e, c, _ int32, _ int64, _ int32) kmsg.Request { return forgedBegin(e, c) }},
	{"EndQuorumEpoch", func(e, _, l int32, _ int64, _ int32) kmsg.Request { return forgedEnd(e, l) }},
	{"Fetch", func(e, c, _ int32, end int64, le int32) kmsg.Request { return forgedFetch(e, c, end, le) }},
	{"FetchSnapshot", func(e, c, _ int32, _ int64, le int32) kmsg.Request { return forgedFetchSnapshot(e, c, le) }},
}

// forgedEpochs are the epochs tried relative to the quorum's epoch e0:
// just past it, far past it, and every epoch at the top of int32, plus a
// few drawn at random from the whole range.
func forgedEpochs(e0 int32, rng *rand.Rand) []int32 {
	out := []int32{e0, e0 + 1, e0 + 2, e0 + 3, e0 + 1000, 1 << 20, 1 << 30,
		math.MaxInt32 - 3, math.MaxInt32 - 2, math.MaxInt32 - 1, math.MaxInt32}
	for range 3 {
		out = append(out, e0+1+rng.Int32N(math.MaxInt32-e0-1))
	}
	return out
}

func TestForgedRequestsLeaveQuorumLive(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 1))
	// Every run of the same three nodes elects the same leader in the same
	// epoch: the first gives the epochs to try.
	_, e0 := newForgeEnv(t).waitLeader(t, 30000)
	epochs := forgedEpochs(e0, rng)
	for _, kind := range forgedKinds {
		for _, epoch := range epochs {
			// To the leader and to a follower, from node 99 (no voter) and
			// as a voter.
			for _, tc := range [][2]bool{{true, false}, {true, true}, {false, false}, {false, true}} {
				toLeader, claimVoter := tc[0], tc[1]
				name := fmt.Sprintf("%s/epoch=%d/leader=%v/voter=%v", kind.name, epoch, toLeader, claimVoter)
				t.Run(name, func(t *testing.T) {
					env := newForgeEnv(t)
					leader, e0 := env.waitLeader(t, 30000)
					target, claimed := leader, int32(99)
					others := env.otherThan(leader)
					if !toLeader {
						target = others[0]
					}
					if claimVoter {
						claimed = others[len(others)-1]
					}
					st := env.nodes[target].Status()
					req := kind.build(epoch, claimed, leader, st.EndOffset, st.LastEpoch)
					env.forge(target, req)
					env.checkLive(t, e0, "after the request")
					for _, id := range env.ids() {
						if err := env.nodes[id].Restart(); err != nil {
							t.Fatalf("restart n%d: %v", id, err)
						}
						env.nodes[id] = env.track(env.nodes[id].Node)
					}
					env.checkLive(t, e0, "after every node restarted")
				})
			}
		}
	}
}

func newForgeEnv(t *testing.T) *interactionEnv {
	t.Helper()
	env := &interactionEnv{nodes: map[int32]*envNode{}, cut: map[[2]int32]bool{},
		conns: connState{open: map[int32][]quorum.Message{}, refusing: map[int32]bool{}, refuseNext: map[[2]int32]int{}}}
	env.addNodes(t, testCmd{name: "add-nodes", args: []string{"3"}})
	return env
}

// step moves every node's clock 50 ms on and delivers until quiet.
func (e *interactionEnv) step(t *testing.T) {
	for _, id := range e.ids() {
		if n := e.nodes[id]; n.Up() {
			n.Advance(50)
		}
	}
	e.stabilize(t)
	e.out.Reset()
}

// quorumLeader is the node a majority follows as leader, in its epoch.
func (e *interactionEnv) quorumLeader() (int32, int32, bool) {
	for _, id := range e.ids() {
		s := e.nodes[id].Status()
		if s.Role != quorum.RoleLeader {
			continue
		}
		n := 0
		for _, o := range e.ids() {
			if os := e.nodes[o].Status(); os.Epoch == s.Epoch && os.LeaderID == id {
				n++
			}
		}
		if 2*n > len(e.nodes) {
			return id, s.Epoch, true
		}
	}
	return 0, 0, false
}

func (e *interactionEnv) waitLeader(t *testing.T, boundMs int64) (int32, int32) {
	t.Helper()
	for ms := int64(0); ms <= boundMs; ms += 50 {
		if id, epoch, ok := e.quorumLeader(); ok {
			return id, epoch
		}
		e.step(t)
	}
	t.Fatalf("no leader within %d ms: %s", boundMs, e.statusLine())
	return 0, 0
}

func (e *interactionEnv) otherThan(id int32) []int32 {
	var out []int32
	for _, o := range e.ids() {
		if o != id {
			out = append(out, o)
		}
	}
	return out
}

func (e *interactionEnv) statusLine() string {
	var s string
	for _, id := range e.ids() {
		st := e.nodes[id].Status()
		s += fmt.Sprintf(" n%d=%s@%d(leader %d)", id, st.Role, st.Epoch, st.LeaderID)
	}
	return s
}

// forge hands req to node target as if from a client socket; its answer is
// dropped (the forger learns nothing it needs).
func (e *interactionEnv) forge(target int32, req kmsg.Request) {
	n := e.nodes[target]
	n.Inbound(req, func(kmsg.Response) {})
	e.processNode(n, false)
}

// checkLive runs the quorum for 12 s and fails if it is without a leader
// for longer than forgedLeaderlessMs at a stretch, ends without one, or
// any node's epoch passes e0+forgedEpochSlack.
func (e *interactionEnv) checkLive(t *testing.T, e0 int32, when string) {
	t.Helper()
	var without, longest int64
	for ms := int64(0); ms < 12000; ms += 50 {
		e.step(t)
		if _, _, ok := e.quorumLeader(); ok {
			without = 0
		} else {
			without += 50
			longest = max(longest, without)
		}
		for _, id := range e.ids() {
			if e.nodes[id].fatal {
				t.Fatalf("%s: n%d stopped on a fatal error:%s", when, id, e.statusLine())
			}
			if ep := e.nodes[id].Status().Epoch; ep > e0+forgedEpochSlack || ep < 0 {
				t.Fatalf("%s: n%d is at epoch %d, the quorum was at %d:%s", when, id, ep, e0, e.statusLine())
			}
		}
	}
	if _, _, ok := e.quorumLeader(); !ok || longest > forgedLeaderlessMs {
		t.Fatalf("%s: the quorum was without a leader for %d ms at a stretch (bound %d), leader now %v:%s",
			when, longest, forgedLeaderlessMs, ok, e.statusLine())
	}
}

func forgedVote(epoch, candidate int32, lastOffset int64, lastEpoch int32, preVote bool) *kmsg.VoteRequest {
	r := kmsg.NewPtrVoteRequest()
	r.Version, r.VoterID = 2, -1
	cluster := clusterID
	r.ClusterID = &cluster
	p := kmsg.NewVoteRequestTopicPartition()
	p.CandidateID, p.CandidateEpoch, p.PreVote = candidate, epoch, preVote
	// The claimed log is at least as long as any voter's, in an epoch the
	// candidate may claim.
	p.LastOffset, p.LastOffsetEpoch = lastOffset, min(lastEpoch, max(epoch-1, 0))
	r.Topics = []kmsg.VoteRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.VoteRequestTopicPartition{p}}}
	return r
}

func forgedBegin(epoch, leader int32) *kmsg.BeginQuorumEpochRequest {
	r := kmsg.NewPtrBeginQuorumEpochRequest()
	r.Version, r.VoterID = 1, -1
	cluster := clusterID
	r.ClusterID = &cluster
	p := kmsg.NewBeginQuorumEpochRequestTopicPartition()
	p.LeaderID, p.LeaderEpoch = leader, epoch
	r.Topics = []kmsg.BeginQuorumEpochRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.BeginQuorumEpochRequestTopicPartition{p}}}
	return r
}

func forgedEnd(epoch, leader int32) *kmsg.EndQuorumEpochRequest {
	r := kmsg.NewPtrEndQuorumEpochRequest()
	r.Version = 1
	cluster := clusterID
	r.ClusterID = &cluster
	p := kmsg.NewEndQuorumEpochRequestTopicPartition()
	p.LeaderID, p.LeaderEpoch = leader, epoch
	r.Topics = []kmsg.EndQuorumEpochRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.EndQuorumEpochRequestTopicPartition{p}}}
	return r
}

func forgedFetch(epoch, replica int32, offset int64, lastEpoch int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.ReplicaID, r.ReplicaState.ID = 17, replica, replica
	cluster := clusterID
	r.ClusterID = &cluster
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = epoch, offset, min(lastEpoch, epoch)
	r.Topics = []kmsg.FetchRequestTopic{{Topic: quorum.MetadataTopic, TopicID: quorum.MetadataTopicID, Partitions: []kmsg.FetchRequestTopicPartition{p}}}
	return r
}

func forgedFetchSnapshot(epoch, replica, lastEpoch int32) *kmsg.FetchSnapshotRequest {
	r := kmsg.NewPtrFetchSnapshotRequest()
	r.Version, r.ReplicaID = 1, replica
	cluster := clusterID
	r.ClusterID = &cluster
	p := kmsg.NewFetchSnapshotRequestTopicPartition()
	p.CurrentLeaderEpoch = epoch
	p.SnapshotID.EndOffset, p.SnapshotID.Epoch = 1, min(lastEpoch, epoch)
	r.Topics = []kmsg.FetchSnapshotRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.FetchSnapshotRequestTopicPartition{p}}}
	return r
}
