package controller

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

// fakeQuorum drives the core as the node's seam does, on the caller's
// goroutine, and commits every proposal into the controller at
// consecutive offsets, as the node's loop would after a quorum commit.
// As Log's contract asks, it never calls back from inside Propose: the
// proposals an input made are taken, in order, once the input returned.
// mu stands for the node's loop being one goroutine. (Tests of what
// happens between proposal and commit step the Core by hand: stepLog, and
// the transcripts in testdata.)
type fakeQuorum struct {
	mu     sync.Mutex
	c      *Controller
	core   *Core
	clk    *clock
	next   int64
	quorum Quorum
	log    []metadata.Record

	inbox []proposed // not yet taken, in order
	// refusal, if set, is the quorum's answer to a kraft.version upgrade;
	// validate holds the validateOnly of every upgrade asked.
	refusal  *Error
	validate []bool
}

type proposed struct {
	epoch   int32
	recs    []metadata.Record
	upgrade *kraftUpgrade
	stamp   func(int64)
	done    func(int64, error)
}

func newFakeQuorum(t testing.TB, c *Controller) *fakeQuorum {
	return &fakeQuorum{c: c, quorum: Quorum{Epoch: 1, Leader: true}}
}

// activate gives the controller its core, driven by q with clk's time
// (a fixed time when nil), leading epoch 1.
func (q *fakeQuorum) activate(clk *clock, s Settings) {
	if clk == nil {
		clk = &clock{now: time.Unix(1000, 0)}
	}
	if s.TopicIDs == nil {
		s.TopicIDs = rand.NewChaCha8([32]byte{9})
	}
	q.clk = clk
	q.core = NewCore(q.c, q, s)
	q.c.Serve(q.drive)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.core.SetQuorum(q.quorum)
}

// drive is the controller's Driver: it runs input, then takes what it
// proposed.
func (q *fakeQuorum) drive(input func(core *Core, now time.Time)) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	input(q.core, q.clk.Now())
	q.flush()
	return true
}

// lead tells the core it leads epoch, or (leader false) that it does not.
func (q *fakeQuorum) lead(epoch int32, leader bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.quorum.Epoch, q.quorum.Leader = epoch, leader
	q.core.SetQuorum(q.quorum)
	q.flush()
}

// tick runs the core's timed work (Core.Tick) at the clock's time, then
// takes what it proposed: what the node's seam does every controller tick.
func (q *fakeQuorum) tick() {
	q.drive(func(core *Core, now time.Time) { core.Tick(now) })
}

func (q *fakeQuorum) Propose(epoch int32, recs []metadata.Record, stamp func(int64), done func(int64, error)) error {
	q.inbox = append(q.inbox, proposed{epoch: epoch, recs: recs, stamp: stamp, done: done})
	return nil
}

func (q *fakeQuorum) ProposeKRaftUpgrade(epoch int32, version int16, validateOnly bool, recs []metadata.Record, done func(int64, error)) error {
	q.inbox = append(q.inbox, proposed{epoch: epoch, recs: recs, upgrade: &kraftUpgrade{version, validateOnly}, done: done})
	return nil
}

// flush takes the proposals in order; a stamp or done may propose more.
func (q *fakeQuorum) flush() {
	for len(q.inbox) > 0 {
		p := q.inbox[0]
		q.inbox = q.inbox[1:]
		q.takeOne(p)
	}
}

// takeOne takes one proposal into the log and commits it. A kraft.version
// upgrade is refused with refusal when set, answered without writing when
// validate-only, else taken with the records behind it.
func (q *fakeQuorum) takeOne(p proposed) {
	if !q.quorum.Leader || p.epoch != q.quorum.Epoch {
		p.done(-1, ErrNotController)
		return
	}
	if u := p.upgrade; u != nil {
		q.validate = append(q.validate, u.validateOnly)
		switch {
		case q.refusal != nil:
			p.done(-1, &KRaftRefusal{Err: q.refusal})
			return
		case u.validateOnly:
			p.done(-1, nil)
			return
		}
		q.quorum.KRaftVersion = u.version
		q.core.SetQuorum(q.quorum)
	}
	first := q.next
	// The log stamps the records before it encodes them, as the node does.
	if p.stamp != nil {
		p.stamp(first)
	}
	q.replay(first, q.take(p.recs))
	p.done(first, nil)
}

// take puts records at the end of the log, round-tripped through the wire
// format as the log would.
func (q *fakeQuorum) take(recs []metadata.Record) []metadata.Record {
	var out []metadata.Record
	for _, r := range recs {
		dec, err := metadata.DecodeValue(metadata.EncodeValue(r))
		if err != nil {
			panic(err)
		}
		out = append(out, dec)
		q.log = append(q.log, dec)
		q.next++
	}
	return out
}

func (q *fakeQuorum) replay(first int64, recs []metadata.Record) {
	for i, r := range recs {
		if err := q.c.Replay(first+int64(i), r); err != nil {
			panic(err)
		}
	}
}

// write puts records in the log and commits them, as another writer (the
// node's activation, or a test) would.
func (q *fakeQuorum) write(recs []metadata.Record) {
	q.mu.Lock()
	defer q.mu.Unlock()
	first := q.next
	q.replay(first, q.take(recs))
}

// end is the offset the next record takes.
func (q *fakeQuorum) end() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.next
}

// kraftVersion is the quorum's kraft.version.
func (q *fakeQuorum) kraftVersion() int16 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.quorum.KRaftVersion
}

// records counts the records in the log that are not NoOps: what an
// operation wrote, leaving out the NoOps that confirm leadership.
func (q *fakeQuorum) records() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return countRecords(q.log)
}

func countRecords(recs []metadata.Record) int {
	n := 0
	for _, r := range recs {
		if _, noOp := r.(*metadata.NoOpRecord); !noOp {
			n++
		}
	}
	return n
}

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

const testCluster = "q1Sh-9_ISia_zwGINzRvyQ"

func newTestController(t testing.TB, mv int16) (*Controller, *fakeQuorum, *clock) {
	t.Helper()
	c := New(1, nil)
	q := newFakeQuorum(t, c)
	clk := &clock{now: time.Unix(1000, 0)}
	q.activate(clk, Settings{NodeID: 1, ClusterID: testCluster, SessionTimeout: 9 * time.Second, Rand: rand.New(rand.NewPCG(1, 2)), TopicIDs: rand.NewChaCha8([32]byte{1})})
	q.write([]metadata.Record{&metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: mv}})
	return c, q, clk
}

func registration(id int32, incarnation byte) *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(4)
	req.BrokerID, req.ClusterID = id, testCluster
	req.IncarnationID = [16]byte{0: incarnation, 1: byte(id), 15: 0xaa}
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(9000 + id)}}
	req.Features = []kmsg.BrokerRegistrationRequestFeature{{Name: MetadataVersionFeature, MinSupportedVersion: 7, MaxSupportedVersion: 27}}
	req.LogDirs = [][16]byte{{0: 0x10, 1: byte(id), 2: incarnation}}
	req.PreviousBrokerEpoch = -1
	return req
}

func heartbeat(id int32, epoch, offset int64, wantFence, wantShutdown bool) *kmsg.BrokerHeartbeatRequest {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(1)
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = id, epoch, offset
	req.WantFence, req.WantShutdown = wantFence, wantShutdown
	return req
}

func code(err error) int16 { c, _ := ErrorCode(err); return c }

// fenceStale fences every broker whose session has run out, one at a time
// as the controller's timer would, until none is left.
func fenceStale(t *testing.T, c *Controller) {
	t.Helper()
	for {
		fenced, err := c.FenceStaleBrokers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !fenced {
			return
		}
	}
}

// register registers and unfences a broker, returning its epoch.
func register(t *testing.T, c *Controller, q *fakeQuorum, id int32) int64 {
	t.Helper()
	return registerWith(t, c, q, registration(id, 1))
}

// registerWith is register with a registration of the caller's.
func registerWith(t *testing.T, c *Controller, q *fakeQuorum, req *kmsg.BrokerRegistrationRequest) int64 {
	t.Helper()
	ctx := context.Background()
	id := req.BrokerID
	epoch, err := c.RegisterBroker(ctx, req)
	if err != nil {
		t.Fatalf("register %d: %v", id, err)
	}
	resp, err := c.BrokerHeartbeat(ctx, heartbeat(id, epoch, q.end(), false, false))
	if err != nil || resp.IsFenced || !resp.IsCaughtUp {
		t.Fatalf("heartbeat %d: %v %+v", id, err, resp)
	}
	return epoch
}

func TestBrokerRegistrationRules(t *testing.T) {
	ctx := context.Background()
	c, q, clk := newTestController(t, 27)

	bad := registration(1, 1)
	bad.ClusterID = "other"
	if _, err := c.RegisterBroker(ctx, bad); code(err) != kerr.InconsistentClusterID.Code {
		t.Errorf("wrong cluster id: %v", err)
	}
	bad = registration(1, 1)
	bad.Features[0].MinSupportedVersion, bad.Features[0].MaxSupportedVersion = 28, 30
	if _, err := c.RegisterBroker(ctx, bad); code(err) != kerr.UnsupportedVersion.Code {
		t.Errorf("unsupported metadata.version: %v", err)
	}
	bad = registration(1, 1)
	bad.LogDirs = nil
	if _, err := c.RegisterBroker(ctx, bad); code(err) != kerr.InvalidRegistration.Code {
		t.Errorf("no log dirs at MV 27: %v", err)
	}

	// The epoch is the offset of the registration's first record.
	want := q.end()
	epoch, err := c.RegisterBroker(ctx, registration(1, 1))
	if err != nil || epoch != want {
		t.Fatalf("register: epoch %d err %v, want %d", epoch, err, want)
	}
	if v := q.log[len(q.log)-1].GetVersion(); v != 3 {
		t.Errorf("RegisterBrokerRecord v%d at MV 27, want v3", v)
	}
	// Same incarnation again: an amendment, same epoch.
	if again, err := c.RegisterBroker(ctx, registration(1, 1)); err != nil || again != epoch {
		t.Errorf("re-registration: epoch %d err %v, want %d", again, err, epoch)
	}
	// Another directory owner is refused.
	other := registration(2, 1)
	other.LogDirs = registration(1, 1).LogDirs
	if _, err := c.RegisterBroker(ctx, other); code(err) != kerr.InvalidRegistration.Code {
		t.Errorf("shared directory: %v", err)
	}
	// A new incarnation while the session lives is a duplicate; after it
	// expires it registers with a new epoch.
	if _, err := c.BrokerHeartbeat(ctx, heartbeat(1, epoch, q.end(), false, false)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterBroker(ctx, registration(1, 2)); code(err) != kerr.DuplicateBrokerRegistration.Code {
		t.Errorf("second incarnation: %v", err)
	}
	clk.now = clk.now.Add(10 * time.Second)
	if fenced, err := c.FenceStaleBrokers(ctx); !fenced || err != nil {
		t.Fatalf("FenceStaleBrokers: %v %v", fenced, err)
	}
	if !c.image.Brokers[1].Fenced {
		t.Fatal("broker 1 not fenced after its session expired")
	}
	epoch2, err := c.RegisterBroker(ctx, registration(1, 2))
	if err != nil || epoch2 <= epoch {
		t.Errorf("new incarnation: epoch %d err %v", epoch2, err)
	}
	if _, err := c.BrokerHeartbeat(ctx, heartbeat(1, epoch, q.end(), false, false)); code(err) != kerr.StaleBrokerEpoch.Code {
		t.Errorf("old epoch heartbeat: %v", err)
	}
}

func TestHeartbeatLifecycle(t *testing.T) {
	ctx := context.Background()
	c, q, clk := newTestController(t, 27)
	epoch, err := c.RegisterBroker(ctx, registration(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	// Behind its registration: not caught up, stays fenced.
	resp, err := c.BrokerHeartbeat(ctx, heartbeat(1, epoch, epoch-1, false, false))
	if err != nil || resp.IsCaughtUp || !resp.IsFenced {
		t.Fatalf("behind: %v %+v", err, resp)
	}
	// Caught up but wants to stay fenced.
	resp, _ = c.BrokerHeartbeat(ctx, heartbeat(1, epoch, epoch, true, false))
	if !resp.IsCaughtUp || !resp.IsFenced {
		t.Fatalf("want fence: %+v", resp)
	}
	resp, _ = c.BrokerHeartbeat(ctx, heartbeat(1, epoch, epoch, false, false))
	if resp.IsFenced {
		t.Fatalf("not unfenced: %+v", resp)
	}
	if change, ok := q.log[len(q.log)-1].(*metadata.BrokerRegistrationChangeRecord); !ok || change.Fenced != -1 {
		t.Fatalf("unfence record %#v", q.log[len(q.log)-1])
	}
	register(t, c, q, 2)
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "t", 4, 2
	create.Topics = append(create.Topics, topic)
	if r, err := c.CreateTopics(ctx, create); err != nil || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, r)
	}
	// Controlled shutdown: leaderships move to broker 2, then it may stop.
	resp, _ = c.BrokerHeartbeat(ctx, heartbeat(1, epoch, q.end(), false, true))
	if resp.ShouldShutdown || resp.IsFenced {
		t.Fatalf("controlled shutdown started: %+v", resp)
	}
	if !c.image.Brokers[1].InControlledShutdown {
		t.Fatal("broker 1 not in controlled shutdown")
	}
	for _, p := range c.image.Topics[c.image.TopicIDs["t"]].Partitions {
		if p.Leader != 2 || slices.Contains(p.Isr, 1) {
			t.Fatalf("partition after controlled shutdown: %+v", p)
		}
	}
	// Broker 2 reports having seen the moves.
	if _, err := c.BrokerHeartbeat(ctx, heartbeat(2, c.image.Brokers[2].BrokerEpoch, q.end(), false, false)); err != nil {
		t.Fatal(err)
	}
	resp, _ = c.BrokerHeartbeat(ctx, heartbeat(1, epoch, q.end(), false, true))
	if !resp.ShouldShutdown || !resp.IsFenced {
		t.Fatalf("shutdown not granted: %+v", resp)
	}
	// Broker 2 dies: after the session timeout it is fenced; with ELR on
	// (not finalized here) it would move to the ELR, here it stays in the
	// ISR as the last member and the partitions lose their leader.
	clk.now = clk.now.Add(10 * time.Second)
	fenceStale(t, c)
	for _, p := range c.image.Topics[c.image.TopicIDs["t"]].Partitions {
		if p.Leader != -1 || !slices.Equal(p.Isr, []int32{2}) {
			t.Fatalf("partition after fencing the last ISR member: %+v", p)
		}
	}
}

func TestNotController(t *testing.T) {
	c, q, _ := newTestController(t, 27)
	q.lead(1, false)
	if _, err := c.RegisterBroker(context.Background(), registration(1, 1)); code(err) != kerr.NotController.Code {
		t.Errorf("follower answered %v", err)
	}
	q.lead(2, true)
	next := q.end()
	if _, err := c.RegisterBroker(context.Background(), registration(1, 1)); err != nil {
		t.Fatal(err)
	}
	if _, ok := q.log[next].(*metadata.NoOpRecord); !ok {
		t.Errorf("a new epoch starts with a NoOp barrier, got %T", q.log[next])
	}
}

func TestPlacement(t *testing.T) {
	rack := func(id int32, r string) usableBroker { return usableBroker{id: id, rack: r} }
	brokers := []usableBroker{rack(1, "a"), rack(2, "a"), rack(3, "b"), rack(4, "b"), rack(5, "c"), rack(6, "c")}
	got, err := placeReplicas(nil, brokers, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for _, replicas := range got {
		leaders[replicas[0]]++
		racks := map[string]bool{}
		for _, r := range replicas {
			racks[brokers[slices.IndexFunc(brokers, func(b usableBroker) bool { return b.id == r })].rack] = true
		}
		if len(replicas) != 3 || len(racks) != 3 {
			t.Errorf("replicas %v span racks %v, want 3 replicas on 3 racks", replicas, racks)
		}
	}
	if len(leaders) != 6 {
		t.Errorf("leaders %v, want each broker to lead one partition", leaders)
	}
	if _, err := placeReplicas(nil, brokers[:2], 1, 3); err == nil || err.Code != invalidReplicationFactor {
		t.Errorf("rf 3 on 2 brokers: %v", err)
	}
	fenced := []usableBroker{{id: 1, fenced: true}, {id: 2}}
	got, err = placeReplicas(nil, fenced, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, replicas := range got {
		if replicas[0] != 2 || !slices.Contains(replicas, 1) {
			t.Errorf("with one fenced broker: %v (a fenced broker never leads, but may follow)", replicas)
		}
	}
	if _, err := placeReplicas(nil, fenced[:1], 1, 1); err == nil {
		t.Error("placing on fenced brokers only succeeded")
	}
}

func TestCreateTopicsValidation(t *testing.T) {
	ctx := context.Background()
	c, q, _ := newTestController(t, 27)
	register(t, c, q, 1)
	register(t, c, q, 2)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	add := func(name string, parts int32, rf int16, cfg map[string]string) {
		topic := kmsg.NewCreateTopicsRequestTopic()
		topic.Topic, topic.NumPartitions, topic.ReplicationFactor = name, parts, rf
		for k, v := range cfg {
			topic.Configs = append(topic.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: &v})
		}
		req.Topics = append(req.Topics, topic)
	}
	add("ok", 2, 2, map[string]string{"retention.ms": "1000"})
	add("dup", 1, 1, nil)
	add("dup", 1, 1, nil)
	add("bad/name", 1, 1, nil)
	add("rf", 1, 3, nil)
	add("zero", 0, 1, nil)
	add("cfg", 1, 1, map[string]string{"retention.ms": "soon"})
	add("unknown", 1, 1, map[string]string{"no.such.config": "1"})
	add("__cluster_metadata", 1, 1, nil)
	resp, err := c.CreateTopics(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{"ok": 0, "dup": kerr.InvalidRequest.Code, "bad/name": kerr.InvalidTopicException.Code,
		"rf": invalidReplicationFactor, "zero": kerr.InvalidPartitions.Code, "cfg": kerr.InvalidConfig.Code,
		"unknown": kerr.InvalidConfig.Code, "__cluster_metadata": kerr.InvalidRequest.Code}
	for _, r := range resp.Topics {
		if want[r.Topic] != r.ErrorCode {
			t.Errorf("%s: error %d, want %d (%v)", r.Topic, r.ErrorCode, want[r.Topic], r.ErrorMessage)
		}
	}
	if len(resp.Topics) != len(want) {
		t.Errorf("%d results, want %d", len(resp.Topics), len(want))
	}
	if c.image.Configs[metadata.ConfigResource{ResourceType: 2, Name: "ok"}]["retention.ms"] != "1000" {
		t.Error("topic config not written")
	}
	// Existing topic, and a name colliding on '.' versus '_'.
	req.Topics = nil
	add("ok", 1, 1, nil)
	add("a.b", 1, 1, nil)
	resp, _ = c.CreateTopics(ctx, req)
	if resp.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Errorf("existing topic: %d", resp.Topics[0].ErrorCode)
	}
	req.Topics = nil
	add("a_b", 1, 1, nil)
	if resp, _ = c.CreateTopics(ctx, req); resp.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("colliding topic: %d", resp.Topics[0].ErrorCode)
	}
	p := c.image.Topics[c.image.TopicIDs["ok"]].Partitions[0]
	if len(p.Replicas) != 2 || len(p.Isr) != 2 || p.Leader != p.Replicas[0] || len(p.Directories()) != 2 {
		t.Errorf("new partition %+v", p)
	}
}

func TestAlterPartition(t *testing.T) {
	ctx := context.Background()
	c, q, _ := newTestController(t, 27)
	e1, e2 := register(t, c, q, 1), register(t, c, q, 2)
	req := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "t", -1, -1
	topic.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}
	req.Topics = append(req.Topics, topic)
	if r, err := c.CreateTopics(ctx, req); err != nil || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	id := c.image.TopicIDs["t"]
	alter := func(broker int32, epoch int64, leaderEpoch, partEpoch int32, isr ...int32) (int16, int16) {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.SetVersion(3)
		req.BrokerID, req.BrokerEpoch = broker, epoch
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = 0, leaderEpoch, partEpoch
		for _, b := range isr {
			rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: b, BrokerEpoch: c.image.Brokers[b].BrokerEpoch})
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := c.AlterPartition(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			return resp.ErrorCode, 0
		}
		return 0, resp.Topics[0].Partitions[0].ErrorCode
	}
	if top, _ := alter(1, e1+100, 0, 0, 1); top != kerr.StaleBrokerEpoch.Code {
		t.Errorf("stale broker epoch: %d", top)
	}
	if _, pc := alter(2, e2, 0, 0, 2); pc != kerr.InvalidRequest.Code {
		t.Errorf("not the leader: %d", pc)
	}
	if _, pc := alter(1, e1, 0, 5, 1); pc != kerr.NotController.Code {
		t.Errorf("newer partition epoch: %d", pc)
	}
	if _, pc := alter(1, e1, 0, 0, 1); pc != 0 {
		t.Errorf("shrink: %d", pc)
	}
	if p := c.image.Topics[id].Partitions[0]; !slices.Equal(p.Isr, []int32{1}) || p.PartitionEpoch != 1 || p.LeaderEpoch != 0 {
		t.Errorf("after shrink %+v", p)
	}
	if _, pc := alter(1, e1, 0, 0, 1, 2); pc != kerr.InvalidUpdateVersion.Code {
		t.Errorf("stale partition epoch: %d", pc)
	}
	if _, pc := alter(1, e1, 0, 1, 1, 2); pc != 0 {
		t.Errorf("expand: %d", pc)
	}
	if p := c.image.Topics[id].Partitions[0]; !slices.Equal(p.Isr, []int32{1, 2}) {
		t.Errorf("after expand %+v", p)
	}
}

func TestUpdateFeatures(t *testing.T) {
	ctx := context.Background()
	c, _, _ := newTestController(t, 21)
	update := func(version int16, name string, level int16, typ int8, validate bool) int16 {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.SetVersion(version)
		req.ValidateOnly = validate
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: name, MaxVersionLevel: level, UpgradeType: typ, AllowDowngrade: typ != upgradeUpgrade}}
		resp, err := c.UpdateFeatures(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := update(1, MetadataVersionFeature, 27, upgradeUpgrade, true); code != 0 || c.MetadataVersion() != 21 {
		t.Errorf("validate-only upgrade: code %d, MV %d", code, c.MetadataVersion())
	}
	if code := update(2, MetadataVersionFeature, 27, upgradeUpgrade, false); code != 0 || c.MetadataVersion() != 27 {
		t.Errorf("upgrade: code %d, MV %d", code, c.MetadataVersion())
	}
	if code := update(2, MetadataVersionFeature, 25, upgradeUpgrade, false); code != kerr.InvalidUpdateVersion.Code {
		t.Errorf("downgrade as upgrade: %d", code)
	}
	// 4.1-IV1 to 4.0-IV3 crosses no level that changed records: safe, as
	// in Apache.
	if code := update(2, MetadataVersionFeature, 25, upgradeSafeDowngrade, false); code != 0 || c.MetadataVersion() != 25 {
		t.Errorf("safe metadata.version downgrade: code %d, MV %d", code, c.MetadataVersion())
	}
	if code := update(2, MetadataVersionFeature, LatestMetadataVersion, upgradeUpgrade, false); code != 0 || c.MetadataVersion() != 33 {
		t.Errorf("upgrade to 4.4-IV2: code %d, MV %d", code, c.MetadataVersion())
	}
	// 4.4-IV2 to 4.4-IV0 crosses 4.4-IV1 and 4.4-IV2, which changed records.
	for _, typ := range []int8{upgradeSafeDowngrade, upgradeUnsafeDowngrade} {
		if code := update(2, MetadataVersionFeature, 31, typ, false); code != kerr.InvalidUpdateVersion.Code || c.MetadataVersion() != 33 {
			t.Errorf("downgrade type %d across changed levels: code %d, MV %d", typ, code, c.MetadataVersion())
		}
	}
	if code := update(0, "group.version", 1, upgradeUpgrade, false); code != 0 {
		t.Errorf("group.version upgrade: %d", code)
	}
	if code := update(0, "group.version", 0, upgradeSafeDowngrade, false); code != 0 {
		t.Errorf("group.version downgrade: %d", code)
	}
	if code := update(1, "no.such.feature", 1, upgradeUpgrade, false); code != kerr.InvalidUpdateVersion.Code {
		t.Errorf("unknown feature: %d", code)
	}
}

func TestPartitionChangeWithElr(t *testing.T) {
	p := metadata.Partition{Replicas: []int32{1, 2, 3}, Isr: []int32{1, 2}, Leader: 1, Exists: true}
	b := &partitionChange{part: p, partition: 0, acceptable: func(r int32) bool { return r != 1 }, targetIsr: []int32{2}, elr: true, minIsr: 2, mv: 27, targetRecovery: 0}
	rec := b.build()
	if rec == nil || rec.Leader != 2 || !slices.Equal(rec.Isr, []int32{2}) || !slices.Equal(rec.EligibleLeaderReplicas, []int32{1}) {
		t.Fatalf("change %+v", rec)
	}
	// Without ELR the last ISR member stays in the ISR when it is removed.
	p = metadata.Partition{Replicas: []int32{1}, Isr: []int32{1}, Leader: 1, Exists: true}
	b = &partitionChange{part: p, acceptable: func(int32) bool { return false }, targetIsr: []int32{}, minIsr: 1, mv: 27}
	if rec = b.build(); rec == nil || rec.Leader != -1 || rec.Isr != nil {
		t.Fatalf("last member %+v", rec)
	}
	// Unclean election takes any live replica and marks it recovering.
	p = metadata.Partition{Replicas: []int32{1, 2}, Isr: []int32{1}, Leader: -1, Exists: true}
	b = &partitionChange{part: p, acceptable: func(r int32) bool { return r == 2 }, targetIsr: []int32{1}, minIsr: 1, mv: 27, election: electUnclean}
	if rec = b.build(); rec == nil || rec.Leader != 2 || !slices.Equal(rec.Isr, []int32{2}) || rec.LeaderRecoveryState != recovering {
		t.Fatalf("unclean %+v", rec)
	}
}
