package controller

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// stepLog is a log the test steps by hand, on the test's goroutine, as a
// simulator would: Propose only queues; take gives queued proposals their
// offsets (refusing those of an epoch this node does not lead), commit
// replays and reports the oldest taken ones, lose fails everything.
type stepLog struct {
	t        *testing.T
	ctl      *Controller
	core     *Core
	epoch    int32
	leader   bool
	next     int64
	queued   []*stepProposal // handed over, not yet taken
	taken    []*stepProposal // taken, not yet committed
	encoded  [][]byte        // every record taken, in log order
	proposes int
}

type stepProposal struct {
	epoch int32
	first int64
	recs  []metadata.Record
	stamp func(int64)
	done  func(int64, error)
}

func (l *stepLog) Propose(epoch int32, recs []metadata.Record, stamp func(int64), done func(int64, error)) error {
	l.proposes++
	l.queued = append(l.queued, &stepProposal{epoch: epoch, first: -1, recs: recs, stamp: stamp, done: done})
	return nil
}

func (l *stepLog) ProposeKRaftUpgrade(int32, int16, bool, []metadata.Record, func(int64, error)) error {
	l.t.Fatal("stepLog takes no kraft.version upgrade")
	return nil
}

// lead makes this node the leader of epoch, and tells the core.
func (l *stepLog) lead(epoch int32) {
	l.leader, l.epoch = true, epoch
	l.core.SetQuorum(Quorum{Epoch: epoch, Leader: true})
}

// take takes every queued proposal; a stamp may queue more work, which
// waits for the next take.
func (l *stepLog) take() {
	queued := l.queued
	l.queued = nil
	for _, p := range queued {
		if !l.leader || p.epoch != l.epoch {
			p.done(-1, ErrNotController)
			continue
		}
		p.first = l.next
		if p.stamp != nil {
			p.stamp(p.first)
		}
		for _, r := range p.recs {
			l.encoded = append(l.encoded, metadata.EncodeValue(r))
			l.next++
		}
		l.taken = append(l.taken, p)
	}
}

// commit replays the oldest n taken proposals into the committed image
// and reports them.
func (l *stepLog) commit(n int) {
	batch := l.taken[:n]
	l.taken = l.taken[n:]
	for _, p := range batch {
		for i := range p.recs {
			rec, err := metadata.DecodeValue(l.encoded[p.first+int64(i)])
			if err != nil {
				l.t.Fatal(err)
			}
			if err := l.ctl.Replay(p.first+int64(i), rec); err != nil {
				l.t.Fatal(err)
			}
		}
		p.done(p.first, nil)
	}
}

// settle takes and commits until nothing is left.
func (l *stepLog) settle() {
	for len(l.queued)+len(l.taken) > 0 {
		l.take()
		l.commit(len(l.taken))
	}
}

// lose ends the leadership: what was taken leaves the log, and every
// proposal fails.
func (l *stepLog) lose() {
	l.leader = false
	if len(l.taken) > 0 {
		l.encoded = l.encoded[:l.taken[0].first]
		l.next = l.taken[0].first
	}
	failed := append(l.taken, l.queued...)
	l.taken, l.queued = nil, nil
	for _, p := range failed {
		p.done(-1, ErrNotController)
	}
	// The node fails what was in flight before it tells the core, and
	// refuses what the core proposed in between.
	l.core.SetQuorum(Quorum{Epoch: l.epoch})
	l.take()
}

// records counts the records in the log that are not NoOps.
func (l *stepLog) records() int {
	recs := make([]metadata.Record, 0, len(l.encoded))
	for _, b := range l.encoded {
		rec, err := metadata.DecodeValue(b)
		if err != nil {
			l.t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return countRecords(recs)
}

// write commits records from another writer (the node's activation).
func (l *stepLog) write(recs ...metadata.Record) {
	for _, r := range recs {
		l.encoded = append(l.encoded, metadata.EncodeValue(r))
		if err := l.ctl.Replay(l.next, r); err != nil {
			l.t.Fatal(err)
		}
		l.next++
	}
}

// newStepCore is a core at MV 27 on a stepLog, its randomness from seed.
func newStepCore(t *testing.T, seed uint64) (*Core, *stepLog) {
	ctl := New(1, nil)
	l := &stepLog{t: t, ctl: ctl, epoch: 1, leader: true}
	l.write(&metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 27})
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	c := NewCore(ctl, l, Settings{NodeID: 1, ClusterID: testCluster, SessionTimeout: 9 * time.Second,
		Rand: rand.New(rand.NewPCG(seed, 7)), TopicIDs: rand.NewChaCha8(key)})
	l.core = c
	c.SetQuorum(Quorum{Epoch: 1, Leader: true})
	return c, l
}

var stepEpoch = time.Unix(1000, 0)

// stepRegister registers and unfences broker id, stepping the log.
func stepRegister(t *testing.T, c *Core, l *stepLog, id int32, rack string) int64 {
	t.Helper()
	req := registration(id, 1)
	req.Rack = &rack
	epoch := int64(-1)
	c.RegisterBroker(stepEpoch, req, func(e int64, err error) {
		if err != nil {
			t.Fatalf("register %d: %v", id, err)
		}
		epoch = e
	})
	l.settle()
	if epoch < 0 {
		t.Fatalf("register %d: no answer", id)
	}
	fenced := true
	c.BrokerHeartbeat(stepEpoch, heartbeat(id, epoch, l.next, false, false), func(r *kmsg.BrokerHeartbeatResponse, err error) {
		if err != nil {
			t.Fatalf("heartbeat %d: %v", id, err)
		}
		fenced = r.IsFenced
	})
	l.settle()
	if fenced {
		t.Fatalf("broker %d still fenced", id)
	}
	return epoch
}

func createRequest(names ...string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	for _, n := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n, 1, 1
		req.Topics = append(req.Topics, t)
	}
	return req
}

// stepCreate starts a CreateTopics for name and records its answer in
// order, as "name:code" or "name:err".
func stepCreate(c *Core, now time.Time, name string, partitions int32, rf int16, order *[]string) {
	req := createRequest(name)
	req.Topics[0].NumPartitions, req.Topics[0].ReplicationFactor = partitions, rf
	c.CreateTopics(now, req, func(r *kmsg.CreateTopicsResponse, err error) {
		if err != nil {
			*order = append(*order, fmt.Sprintf("%s:%d", name, code(err)))
			return
		}
		*order = append(*order, fmt.Sprintf("%s:%d", name, r.Topics[0].ErrorCode))
	})
}

// Operations in flight are answered in commit order, each only once its
// records commit; a rejection that read uncommitted records waits for
// them; and nothing blocks: the test drives everything on one goroutine.
func TestCoreAnswersInCommitOrder(t *testing.T) {
	c, l := newStepCore(t, 1)
	stepRegister(t, c, l, 1, "a")
	var order []string
	for i := range 3 {
		stepCreate(c, stepEpoch, fmt.Sprintf("t%d", i), 1, 1, &order)
	}
	stepCreate(c, stepEpoch, "t0", 1, 1, &order) // a read of t0 in flight
	l.take()
	if len(l.taken) != 4 || len(order) != 0 {
		t.Fatalf("%d writes taken, answers %v; want 3 and the read's NoOp, and none", len(l.taken), order)
	}
	// The read is answered only once the NoOp written after it commits.
	want := [][]string{{"t0:0"}, {"t0:0", "t1:0"}, {"t0:0", "t1:0", "t2:0"}, {"t0:0", "t1:0", "t2:0", fmt.Sprintf("t0:%d", kerr.TopicAlreadyExists.Code)}}
	for i := range 4 {
		l.commit(1)
		if fmt.Sprint(order) != fmt.Sprint(want[i]) {
			t.Fatalf("after %d commits: answers %v, want %v", i+1, order, want[i])
		}
	}
}

// Losing the leadership fails every pending operation with NOT_CONTROLLER:
// writes taken, a read resting on them, a registration not yet taken and
// an operation queued behind it. The next epoch starts from the committed
// image.
func TestCoreLeadershipLossFailsPending(t *testing.T) {
	c, l := newStepCore(t, 1)
	stepRegister(t, c, l, 1, "a")
	var order []string
	stepCreate(c, stepEpoch, "kept", 1, 1, &order)
	l.settle()
	stepCreate(c, stepEpoch, "lost-a", 1, 1, &order)
	stepCreate(c, stepEpoch, "lost-b", 1, 1, &order)
	l.take()
	stepCreate(c, stepEpoch, "lost-a", 1, 1, &order) // read: rests on the writes in flight
	regErr := error(nil)
	c.RegisterBroker(stepEpoch, registration(2, 1), func(_ int64, err error) { regErr = err })
	stepCreate(c, stepEpoch, "queued", 1, 1, &order) // waits for the registration's offset
	if len(l.queued) != 2 {
		t.Fatalf("%d proposals queued, want the read's NoOp and the registration", len(l.queued))
	}
	l.lose()
	nc := kerr.NotController.Code
	want := fmt.Sprint([]string{"kept:0", fmt.Sprintf("lost-a:%d", nc), fmt.Sprintf("lost-b:%d", nc), fmt.Sprintf("lost-a:%d", nc), fmt.Sprintf("queued:%d", nc)})
	if fmt.Sprint(order) != want || code(regErr) != nc {
		t.Fatalf("answers %v, registration %v; want %s and NOT_CONTROLLER", order, regErr, want)
	}

	l.lead(2)
	order = nil
	stepCreate(c, stepEpoch, "lost-a", 1, 1, &order)
	stepCreate(c, stepEpoch, "kept", 1, 1, &order)
	l.settle()
	want = fmt.Sprint([]string{"lost-a:0", fmt.Sprintf("kept:%d", kerr.TopicAlreadyExists.Code)})
	if fmt.Sprint(order) != want {
		t.Fatalf("next epoch: answers %v, want %s", order, want)
	}
}

// stepScenario runs brokers on two racks, topics placed at random, a
// fencing, ISR expansions and a balancing pass, with writes pipelined, on
// a core seeded with seed, and returns every record the log took, encoded,
// and every answer.
func stepScenario(t *testing.T, seed uint64) ([][]byte, []string) {
	c, l := newStepCore(t, seed)
	for id := int32(1); id <= 4; id++ {
		stepRegister(t, c, l, id, fmt.Sprintf("rack-%d", id%2))
	}
	var order []string
	for i := range 6 {
		stepCreate(c, stepEpoch, fmt.Sprintf("topic-%d", i), 3, 3, &order)
		if i%2 == 1 {
			l.take()
			l.commit(1)
		}
	}
	l.settle()
	// Brokers 1-3 keep heartbeating; broker 4 falls silent and is fenced.
	now := stepEpoch.Add(5 * time.Second)
	for id := int32(1); id <= 3; id++ {
		c.BrokerHeartbeat(now, heartbeat(id, c.ctl.image.Brokers[id].BrokerEpoch, l.next, false, false), func(*kmsg.BrokerHeartbeatResponse, error) {})
	}
	l.settle()
	c.Tick(stepEpoch.Add(10 * time.Second))
	for range 5 {
		l.settle()
	}
	if !c.ctl.image.Brokers[4].Fenced {
		t.Fatal("broker 4 not fenced")
	}
	// It comes back; balancing gives it back the leaderships it prefers.
	now = stepEpoch.Add(11 * time.Second)
	c.BrokerHeartbeat(now, heartbeat(4, c.ctl.image.Brokers[4].BrokerEpoch, l.next, false, false), func(r *kmsg.BrokerHeartbeatResponse, err error) {
		order = append(order, fmt.Sprintf("heartbeat-4:fenced=%v:%v", r.IsFenced, err))
	})
	l.settle()
	// The leaders of the partitions it prefers take it back into their ISR.
	for _, id := range sortedTopicIDs(c.ctl.image) {
		topic := c.ctl.image.Topics[id]
		for pid, p := range topic.Partitions {
			if p.Replicas[0] != 4 || p.Leader < 0 {
				continue
			}
			req := kmsg.NewPtrAlterPartitionRequest()
			req.SetVersion(3)
			req.BrokerID, req.BrokerEpoch = p.Leader, c.ctl.image.Brokers[p.Leader].BrokerEpoch
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.TopicID = id
			rp := kmsg.NewAlterPartitionRequestTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = int32(pid), p.LeaderEpoch, p.PartitionEpoch
			for _, b := range append(p.Isr, 4) {
				rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: b, BrokerEpoch: c.ctl.image.Brokers[b].BrokerEpoch})
			}
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			c.AlterPartition(now, req, func(r *kmsg.AlterPartitionResponse, err error) {
				if err != nil {
					t.Fatalf("AlterPartition: %v", err)
				}
				order = append(order, fmt.Sprintf("alter:%d", r.Topics[0].Partitions[0].ErrorCode))
			})
		}
	}
	l.settle()
	c.BalanceLeaders(now, func(moved int, err error) { order = append(order, fmt.Sprintf("balanced:%d:%v", moved, err)) })
	l.settle()
	if order[len(order)-1] == "balanced:0:<nil>" {
		t.Fatal("balancing moved nothing")
	}
	return l.encoded, order
}

// Two runs from one seed write byte-identical records (topic ids and
// placement included) and give the same answers; another seed does not.
func TestCoreIsDeterministic(t *testing.T) {
	a, answersA := stepScenario(t, 42)
	b, answersB := stepScenario(t, 42)
	if len(a) != len(b) {
		t.Fatalf("%d records, then %d", len(a), len(b))
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("record %d differs between runs of one seed:\n%x\n%x", i, a[i], b[i])
		}
	}
	if fmt.Sprint(answersA) != fmt.Sprint(answersB) {
		t.Fatalf("answers differ: %v, then %v", answersA, answersB)
	}
	other, _ := stepScenario(t, 43)
	if fmt.Sprint(other) == fmt.Sprint(a) {
		t.Fatal("another seed wrote the same records")
	}
}

// Topic ids are UUID v4 drawn from the injected source, never reserved.
func TestTopicIDsAreV4FromTheInjectedSource(t *testing.T) {
	seen := map[[16]byte]bool{}
	for i := range 1000 {
		id := newTopicID(rand.NewChaCha8([32]byte{byte(i), byte(i >> 8)}))
		if id[6]>>4 != 4 || id[8]>>6 != 2 {
			t.Fatalf("%x is not a v4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("%x drawn twice", id)
		}
		seen[id] = true
	}
	// Even a source of zeros yields an id that is not the zero id.
	if id := newTopicID(bytes.NewReader(make([]byte, 16))); id == ([16]byte{}) || reservedDir(metadata.Uuid(id)) {
		t.Fatalf("reserved id %x", id)
	}
}

// A leader cut off from the quorum does not know that another has been
// elected and has created topic b. Its image still lacks b, so it must not
// answer a DeleteTopics of b with UNKNOWN_TOPIC_OR_PARTITION (nor a
// CreateTopics of a, which it has, with TOPIC_ALREADY_EXISTS): each answer
// waits for a NoOp written after the request to commit, and when the
// leadership turns out lost, both fail with NOT_CONTROLLER.
func TestDeposedLeaderAnswersNothingFromItsImage(t *testing.T) {
	c, l := newStepCore(t, 1)
	stepRegister(t, c, l, 1, "a")
	var order []string
	stepCreate(c, stepEpoch, "a", 1, 1, &order)
	l.settle()

	stepCreate(c, stepEpoch, "a", 1, 1, &order)
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(6)
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("b")
	del.Topics = append(del.Topics, dt)
	c.DeleteTopics(stepEpoch, del, func(r *kmsg.DeleteTopicsResponse, err error) {
		if err != nil {
			order = append(order, fmt.Sprintf("delete-b:%d", code(err)))
			return
		}
		order = append(order, fmt.Sprintf("delete-b:%d", r.Topics[0].ErrorCode))
	})
	if fmt.Sprint(order) != "[a:0]" {
		t.Fatalf("answered from the image before any proof of leadership: %v", order)
	}
	l.take()
	if before := l.records(); len(l.taken) != 1 || len(l.taken[0].recs) != 1 {
		t.Fatalf("%d appends taken (%d records besides NoOps); want one NoOp for both refusals", len(l.taken), before)
	}
	l.lose()
	l.take() // the NoOp the delete waited for, proposed as the first failed
	nc := kerr.NotController.Code
	if want := fmt.Sprint([]string{"a:0", fmt.Sprintf("a:%d", nc), fmt.Sprintf("delete-b:%d", nc)}); fmt.Sprint(order) != want {
		t.Fatalf("answers %v, want %s", order, want)
	}

	// Leading again, the same refusals are given once their NoOp commits.
	l.lead(2)
	order = nil
	stepCreate(c, stepEpoch, "a", 1, 1, &order)
	if len(order) != 0 {
		t.Fatalf("answered before the NoOp committed: %v", order)
	}
	l.settle()
	if want := fmt.Sprintf("[a:%d]", kerr.TopicAlreadyExists.Code); fmt.Sprint(order) != want {
		t.Fatalf("answers %v, want %s", order, want)
	}
}
