package quorum_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/quorum/memlog"
	"github.com/kraftd/kraftd/storage/batch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestInteraction runs every transcript in testdata/.
func TestInteraction(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			env := &interactionEnv{nodes: map[int32]*envNode{}, cut: map[[2]int32]bool{}}
			runDataDriven(t, f, env.handle)
		})
	}
}

type envNode struct {
	id    int32
	node  *quorum.Node
	log   *memlog.Log
	hs    quorum.HardState
	now   int64
	role  quorum.Role
	epoch int32
	down  bool
}

type interactionEnv struct {
	nodes   map[int32]*envNode
	voters  map[int32][]quorum.Endpoint
	oldVote map[int32]bool // peers that only speak Vote v1
	queue   []quorum.Message
	cut     map[[2]int32]bool // directed links that drop messages
	// holds keep back the next message on a link whose description starts
	// with a given word, until release: a late answer, delivered after the
	// ones that overtook it.
	holds []holdRule
	held  []quorum.Message
	out   strings.Builder
}

type holdRule struct {
	from, to int32
	kind     string
}

func (e *interactionEnv) printf(format string, args ...any) { fmt.Fprintf(&e.out, format, args...) }

func (e *interactionEnv) ids() []int32 {
	var ids []int32
	for id := range e.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func parseIDs(s string) []int32 {
	var out []int32
	for _, f := range strings.FieldsFunc(strings.Trim(s, "()"), func(r rune) bool { return r == ',' || r == ' ' }) {
		v, _ := strconv.Atoi(f)
		out = append(out, int32(v))
	}
	return out
}

func (e *interactionEnv) handle(t *testing.T, c testCmd) string {
	e.out.Reset()
	switch c.name {
	case "add-nodes":
		// Example: add-nodes 3 observers=1 old-vote=(3)
		n, _ := strconv.Atoi(c.args[0])
		obs, _ := strconv.Atoi(c.arg("observers", "0"))
		e.voters = map[int32][]quorum.Endpoint{}
		e.oldVote = map[int32]bool{}
		for _, id := range parseIDs(c.arg("old-vote", "")) {
			e.oldVote[id] = true
		}
		for i := 1; i <= n; i++ {
			e.voters[int32(i)] = []quorum.Endpoint{{Name: "CONTROLLER", Host: "localhost", Port: uint16(9090 + i)}}
		}
		for i := 1; i <= n; i++ {
			e.start(t, int32(i), &memlog.Log{}, quorum.HardState{LeaderID: -1, VotedID: -1}, 0)
		}
		for i := 1; i <= obs; i++ {
			e.start(t, int32(100+i), &memlog.Log{}, quorum.HardState{LeaderID: -1, VotedID: -1}, 0)
		}
		e.printStatus()
	case "tick":
		// Example: tick 500 [node=1]
		ms, _ := strconv.ParseInt(c.args[0], 10, 64)
		only := parseIDs(c.arg("node", ""))
		for _, id := range e.ids() {
			if n := e.nodes[id]; !n.down && (len(only) == 0 || slices.Contains(only, id)) {
				n.now += ms
				n.node.Tick(n.now)
			}
		}
		e.processReady()
	case "campaign":
		// Example: campaign 1 — let node 1's election (or fetch) timer expire.
		for _, id := range parseIDs(c.args[0]) {
			n := e.nodes[id]
			n.now += 4000
			n.node.Tick(n.now)
		}
		e.processReady()
	case "stabilize":
		e.stabilize(t)
	case "run":
		// Example: run 3000 — advance every node's clock in 50 ms steps,
		// stabilizing after each, and print only role changes.
		ms, _ := strconv.ParseInt(c.args[0], 10, 64)
		for elapsed := int64(0); elapsed < ms; elapsed += 50 {
			for _, id := range e.ids() {
				if n := e.nodes[id]; !n.down {
					n.now += 50
					n.node.Tick(n.now)
				}
			}
			e.stabilize(t)
		}
		var keep []string
		for _, l := range strings.Split(e.out.String(), "\n") {
			if strings.Contains(l, " became ") || strings.Contains(l, "error") || strings.Contains(l, "truncated") || strings.Contains(l, "installed") {
				keep = append(keep, l)
			}
		}
		e.out.Reset()
		e.out.WriteString(strings.Join(keep, "\n"))
	case "isolate":
		// Example: isolate 1 — cut every link to and from node 1.
		for _, id := range parseIDs(c.args[0]) {
			for _, other := range e.ids() {
				e.cut[[2]int32{id, other}] = true
				e.cut[[2]int32{other, id}] = true
			}
		}
	case "heal":
		clear(e.cut)
	case "hold":
		// Example: hold 3->1 FetchResponse — keep back the next FetchResponse
		// from node 3 to node 1 until release.
		from, to, _ := strings.Cut(c.args[0], "->")
		e.holds = append(e.holds, holdRule{from: parseIDs(from)[0], to: parseIDs(to)[0], kind: c.args[1]})
	case "release":
		// Deliver every held message, oldest first, then stabilize.
		e.queue = append(e.held, e.queue...)
		e.held, e.holds = nil, nil
		e.stabilize(t)
	case "propose":
		// Example: propose 1 a b c
		n := e.nodes[parseIDs(c.args[0])[0]]
		var recs [][]byte
		for _, v := range c.args[1:] {
			recs = append(recs, []byte(v))
		}
		base, epoch, err := n.node.Propose(recs)
		if err != nil {
			e.printf("error: %v\n", err)
		} else {
			e.printf("base=%d epoch=%d\n", base, epoch)
		}
		e.processReady()
	case "resign":
		e.nodes[parseIDs(c.args[0])[0]].node.Resign()
		e.processReady()
	case "crash":
		n := e.nodes[parseIDs(c.args[0])[0]]
		n.down = true
		n.log.Crash(nil)
	case "restart":
		n := e.nodes[parseIDs(c.args[0])[0]]
		e.start(t, n.id, n.log, n.hs, n.now)
		e.printStatus()
	case "snapshot":
		// Example: snapshot 1 — compact node 1's log up to its high watermark.
		n := e.nodes[parseIDs(c.args[0])[0]]
		hw := n.node.Status().HighWatermark
		if err := n.log.TakeSnapshot(hw); err != nil {
			e.printf("error: %v\n", err)
		}
		id, _ := n.log.LatestSnapshot()
		e.printf("snapshot %d@%d start=%d\n", id.EndOffset, id.Epoch, n.log.StartOffset())
	case "status":
		e.printStatus()
	case "log":
		for _, id := range parseIDs(strings.Join(c.args, ",")) {
			e.printLog(id)
		}
	case "send":
		// Example: send fetch to=1 from=9 epoch=1 offset=0 last-epoch=0
		//          send vote to=2 from=9 epoch=3 last=0@0 pre voter=2
		// Steps one hand-made request and prints the direct answer.
		to := parseIDs(c.arg("to", "1"))[0]
		from := parseIDs(c.arg("from", "9"))[0]
		num := func(k string, def int64) int64 {
			v, _ := strconv.ParseInt(c.arg(k, strconv.FormatInt(def, 10)), 10, 64)
			return v
		}
		cluster := c.arg("cluster", "test-cluster")
		var req kmsg.Request
		switch c.args[0] {
		case "fetch":
			r := kmsg.NewPtrFetchRequest()
			r.Version = int16(num("version", 18))
			r.ClusterID = &cluster
			r.ReplicaID, r.ReplicaState.ID = from, from
			r.MaxWaitMillis = int32(num("maxwait", 0))
			p := kmsg.NewFetchRequestTopicPartition()
			p.CurrentLeaderEpoch = int32(num("epoch", 0))
			p.FetchOffset = num("offset", 0)
			p.LastFetchedEpoch = int32(num("last-epoch", 0))
			tp := kmsg.NewFetchRequestTopic()
			tp.Topic, tp.TopicID = quorum.MetadataTopic, quorum.MetadataTopicID
			if c.has("bad-topic") {
				tp.TopicID = [16]byte{1}
			}
			tp.Partitions = []kmsg.FetchRequestTopicPartition{p}
			r.Topics = []kmsg.FetchRequestTopic{tp}
			req = r
		case "vote":
			r := kmsg.NewPtrVoteRequest()
			r.Version = int16(num("version", 2))
			r.ClusterID = &cluster
			r.VoterID = int32(num("voter", int64(to)))
			p := kmsg.NewVoteRequestTopicPartition()
			p.CandidateEpoch = int32(num("epoch", 0))
			p.CandidateID = int32(num("candidate", int64(from)))
			off, ep, _ := strings.Cut(c.arg("last", "0@0"), "@")
			lo, _ := strconv.ParseInt(off, 10, 64)
			le, _ := strconv.ParseInt(ep, 10, 32)
			p.LastOffset, p.LastOffsetEpoch = lo, int32(le)
			p.PreVote = c.has("pre")
			tp := kmsg.NewVoteRequestTopic()
			tp.Topic = quorum.MetadataTopic
			tp.Partitions = []kmsg.VoteRequestTopicPartition{p}
			r.Topics = []kmsg.VoteRequestTopic{tp}
			req = r
		}
		if err := e.nodes[to].node.Step(quorum.Message{From: from, To: to, ReqID: 1, Request: req}); err != nil {
			e.printf("error: %v\n", err)
		}
		n := e.nodes[to]
		rd := n.node.Ready()
		for _, m := range rd.Messages {
			if m.To == from {
				e.printf("%s\n", describeMessage(m))
			}
		}
		if rd.HardState != nil {
			e.printf("n%d persists epoch=%d voted=%d leader=%d\n", to, rd.HardState.LeaderEpoch, rd.HardState.VotedID, rd.HardState.LeaderID)
		}
		rd.Messages = slices.DeleteFunc(rd.Messages, func(m quorum.Message) bool { return m.To == from })
		e.apply(n, rd)
	case "describe":
		id := parseIDs(c.args[0])[0]
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Version = 2
		tp := kmsg.NewDescribeQuorumRequestTopic()
		tp.Topic = quorum.MetadataTopic
		tp.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
		req.Topics = []kmsg.DescribeQuorumRequestTopic{tp}
		if err := e.nodes[id].node.Step(quorum.Message{From: -1, To: id, ReqID: 1, Request: req}); err != nil {
			e.printf("error: %v\n", err)
		}
		rd := e.nodes[id].node.Ready()
		for _, m := range rd.Messages {
			if r, ok := m.Response.(*kmsg.DescribeQuorumResponse); ok {
				e.describeQuorum(r)
			}
		}
		rd.Messages = slices.DeleteFunc(rd.Messages, func(m quorum.Message) bool { return m.To == -1 })
		e.apply(e.nodes[id], rd)
	default:
		t.Fatalf("%s: unknown command %q", c.pos, c.name)
	}
	return e.out.String()
}

func (e *interactionEnv) start(t *testing.T, id int32, log *memlog.Log, hs quorum.HardState, now int64) {
	cfg := quorum.Config{
		NodeID:    id,
		NowMs:     now,
		ClusterID: "test-cluster",
		Voters:    e.voters,
		Rand:      rand.New(rand.NewPCG(uint64(id), 7)),
		HardState: hs,
		Log:       log,
		PeerVersions: func(peer int32, key int16) int16 {
			if key == 52 && e.oldVote[peer] {
				return 1
			}
			return -1
		},
	}
	n, err := quorum.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := n.Status()
	e.nodes[id] = &envNode{id: id, node: n, log: log, hs: hs, now: now, role: st.Role, epoch: st.Epoch}
}

// processReady applies every node's Ready, queueing its messages.
func (e *interactionEnv) processReady() bool {
	any := false
	for _, id := range e.ids() {
		n := e.nodes[id]
		if n.down || !n.node.HasReady() {
			continue
		}
		any = true
		e.apply(n, n.node.Ready())
	}
	return any
}

func (e *interactionEnv) apply(n *envNode, rd quorum.Ready) {
	if rd.HardState != nil {
		n.hs = *rd.HardState
	}
	if rd.SnapshotWrite != nil {
		if err := n.log.WriteSnapshot(*rd.SnapshotWrite); err != nil {
			e.printf("n%d snapshot error: %v\n", n.id, err)
		}
		if rd.SnapshotWrite.Done {
			e.printf("n%d installed snapshot %d@%d\n", n.id, rd.SnapshotWrite.ID.EndOffset, rd.SnapshotWrite.ID.Epoch)
		}
	}
	if rd.Truncate != nil {
		e.printf("n%d truncated to %d\n", n.id, *rd.Truncate)
		n.log.TruncateTo(*rd.Truncate)
	}
	if len(rd.Append) > 0 {
		if err := n.log.Append(rd.Append); err != nil {
			e.printf("n%d append error: %v\n", n.id, err)
		}
	}
	if rd.MustSync {
		n.log.Sync()
	}
	if rd.SoftState.Role != n.role || rd.SoftState.Epoch != n.epoch {
		e.printf("n%d became %s epoch=%d leader=%d\n", n.id, rd.SoftState.Role, rd.SoftState.Epoch, rd.SoftState.LeaderID)
		n.role, n.epoch = rd.SoftState.Role, rd.SoftState.Epoch
	}
	e.queue = append(e.queue, rd.Messages...)
	n.node.Advance()
}

// stabilize delivers messages and applies Readys until nothing moves.
func (e *interactionEnv) stabilize(t *testing.T) {
	for round := 0; ; round++ {
		if round > 1000 {
			t.Fatal("stabilize did not converge")
		}
		moved := e.processReady()
		if len(e.queue) == 0 {
			if !moved {
				return
			}
			continue
		}
		msgs := e.queue
		e.queue = nil
		for _, m := range msgs {
			to := e.nodes[m.To]
			if to == nil || to.down || e.cut[[2]int32{m.From, m.To}] || e.nodes[m.From].down {
				e.printf("%s (dropped)\n", describeMessage(m))
				continue
			}
			if e.hold(m) {
				e.printf("%s (held)\n", describeMessage(m))
				continue
			}
			e.printf("%s\n", describeMessage(m))
			if err := to.node.Step(m); err != nil {
				e.printf("n%d error: %v\n", m.To, err)
			}
		}
	}
}

// hold takes m out of the traffic if a hold rule wants it; each rule holds
// one message.
func (e *interactionEnv) hold(m quorum.Message) bool {
	desc := describeMessage(m)
	for i, h := range e.holds {
		if h.from == m.From && h.to == m.To && strings.HasPrefix(desc, fmt.Sprintf("%d->%d %s ", m.From, m.To, h.kind)) {
			e.holds = slices.Delete(e.holds, i, i+1)
			e.held = append(e.held, m)
			return true
		}
	}
	return false
}

func (e *interactionEnv) printStatus() {
	for _, id := range e.ids() {
		n := e.nodes[id]
		if n.down {
			e.printf("n%d down\n", id)
			continue
		}
		s := n.node.Status()
		e.printf("n%d %s epoch=%d leader=%d voted=%d hw=%d end=%d@%d\n", id, s.Role, s.Epoch, s.LeaderID, s.VotedID, s.HighWatermark, s.EndOffset, s.LastEpoch)
	}
}

func (e *interactionEnv) printLog(id int32) {
	n := e.nodes[id]
	var parts []string
	if snap, ok := n.log.LatestSnapshot(); ok {
		parts = append(parts, fmt.Sprintf("snap(%d@%d)", snap.EndOffset, snap.Epoch))
	}
	for _, b := range n.log.Batches() {
		parts = append(parts, describeBatch(b.Raw))
	}
	e.printf("n%d: %s\n", id, strings.Join(parts, " "))
}

// describeBatch renders a batch as [base-last@epoch values] with control
// records named by type.
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
		vals = append(vals, string(r.Value))
	}
	return fmt.Sprintf("[%d-%d@%d %s]", b.BaseOffset, b.LastOffset(), b.PartitionLeaderEpoch, strings.Join(vals, ","))
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
	}
	if m.Err != nil {
		return fmt.Sprintf("%s failed: %v", head, m.Err)
	}
	switch r := m.Response.(type) {
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
