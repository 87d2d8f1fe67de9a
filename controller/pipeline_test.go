package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/metadata"
)

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

// createResult is one CreateTopics call's answer.
type createResult struct {
	code int16
	err  error
}

// startCreate runs CreateTopics for one topic in the background.
func startCreate(c *Controller, name string) chan createResult {
	out := make(chan createResult, 1)
	go func() {
		resp, err := c.CreateTopics(context.Background(), createRequest(name))
		if err != nil {
			out <- createResult{err: err}
			return
		}
		out <- createResult{code: resp.Topics[0].ErrorCode}
	}()
	return out
}

// waitHeld waits until the quorum holds n appends not yet committed.
func waitHeld(t *testing.T, q *fakeQuorum, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for q.heldCount() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d appends pending, want %d", q.heldCount(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func notAnswered(t *testing.T, ch chan createResult, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s answered before its records committed: %+v", what, r)
	case <-time.After(20 * time.Millisecond):
	}
}

func answer(t *testing.T, ch chan createResult) createResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
		return createResult{}
	}
}

// pipelineCluster is a controller at MV 27 with one unfenced broker and
// every append held until the test commits it.
func pipelineCluster(t *testing.T) (*Controller, *fakeQuorum) {
	t.Helper()
	c, q, _ := newTestController(t, 27)
	register(t, c, q, 1)
	q.mu.Lock()
	q.hold = true
	q.mu.Unlock()
	return c, q
}

// Many operations are in flight at once; each is answered only once its
// own records have committed, and in commit order.
func TestPipelinedOperationsAnswerInCommitOrder(t *testing.T) {
	c, q := pipelineCluster(t)
	const n = 5
	var results []chan createResult
	for i := range n {
		results = append(results, startCreate(c, fmt.Sprintf("t%d", i)))
		// Each is handed to the quorum without waiting for the one before
		// to commit.
		waitHeld(t, q, i+1)
	}
	for i := range n {
		notAnswered(t, results[i], fmt.Sprintf("create t%d", i))
		q.commit(1)
		if r := answer(t, results[i]); r.err != nil || r.code != 0 {
			t.Fatalf("create t%d: %+v", i, r)
		}
		for j := i + 1; j < n; j++ {
			select {
			case r := <-results[j]:
				t.Fatalf("create t%d answered when only t0..t%d had committed: %+v", j, i, r)
			default:
			}
		}
	}
	for i := range n {
		if _, ok := c.image.TopicIDs[fmt.Sprintf("t%d", i)]; !ok {
			t.Errorf("t%d not in the committed image", i)
		}
	}
}

// The second of two CreateTopics for the same name, made while the first
// is in flight, sees the first through the speculative image; its answer
// waits for the first's commit, since it rests on it.
func TestSpeculativeValidation(t *testing.T) {
	c, q := pipelineCluster(t)
	first := startCreate(c, "dup")
	waitHeld(t, q, 1)
	second := startCreate(c, "dup")
	notAnswered(t, second, "the second create")
	if got := q.heldWrites(); got != 1 {
		t.Fatalf("the second create wrote records: %d appends pending", got)
	}
	// A CreatePartitions for the topic in flight finds it too.
	grow := make(chan error, 1)
	go func() {
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "dup", 2
		req.Topics = append(req.Topics, rt)
		resp, err := c.CreatePartitions(context.Background(), req)
		if err == nil && resp.Topics[0].ErrorCode != 0 {
			err = fmt.Errorf("CreatePartitions: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
		}
		grow <- err
	}()
	waitHeld(t, q, 3) // the first create, the second's NoOp, the new partition
	q.commit(3)
	if r := answer(t, first); r.err != nil || r.code != 0 {
		t.Fatalf("first create: %+v", r)
	}
	if r := answer(t, second); r.err != nil || r.code != kerr.TopicAlreadyExists.Code {
		t.Fatalf("second create: %+v, want TOPIC_ALREADY_EXISTS", r)
	}
	if err := <-grow; err != nil {
		t.Fatal(err)
	}
	if got := len(c.image.Topics[c.image.TopicIDs["dup"]].Partitions); got != 2 {
		t.Fatalf("dup has %d partitions, want 2", got)
	}
}

// When the leadership is lost with operations in flight, they fail with
// NOT_CONTROLLER, and so does a read that rested on them; in the next
// epoch the speculative image is rebuilt from the committed one, so what
// never committed is not there.
func TestLeadershipLossWithOperationsInFlight(t *testing.T) {
	c, q := pipelineCluster(t)
	committed := startCreate(c, "kept")
	waitHeld(t, q, 1)
	q.commit(1)
	if r := answer(t, committed); r.err != nil || r.code != 0 {
		t.Fatalf("create kept: %+v", r)
	}
	a := startCreate(c, "lost-a")
	waitHeld(t, q, 1)
	b := startCreate(c, "lost-b")
	waitHeld(t, q, 2)
	read := startCreate(c, "lost-a") // rejected against the speculative image
	notAnswered(t, read, "the read")
	q.lose()
	for name, ch := range map[string]chan createResult{"lost-a": a, "lost-b": b, "the read": read} {
		if r := answer(t, ch); code(r.err) != kerr.NotController.Code {
			t.Errorf("%s: %+v, want NOT_CONTROLLER", name, r)
		}
	}
	if r := answer(t, startCreate(c, "x")); code(r.err) != kerr.NotController.Code {
		t.Errorf("create while not leader: %+v", r)
	}

	q.mu.Lock()
	q.leader, q.epoch, q.hold = true, 2, false
	q.mu.Unlock()
	for _, name := range []string{"lost-a", "lost-b"} {
		if r := answer(t, startCreate(c, name)); r.err != nil || r.code != 0 {
			t.Errorf("create %s again in the next epoch: %+v", name, r)
		}
	}
	if r := answer(t, startCreate(c, "kept")); r.code != kerr.TopicAlreadyExists.Code {
		t.Errorf("create kept again: %+v, want TOPIC_ALREADY_EXISTS", r)
	}
}

// An operation refused by the quorum (built for an epoch the node no longer
// leads, though the controller has not noticed yet) fails, and so does
// everything built on it; the next operation of a new leadership starts
// from the committed image.
func TestRefusedAppendRebuildsTheSpeculativeImage(t *testing.T) {
	c, q := pipelineCluster(t)
	a := startCreate(c, "a")
	waitHeld(t, q, 1)
	// The quorum moves on to epoch 2 without the controller having built
	// anything in it: the held append is lost, and the next one, built for
	// epoch 1, is refused.
	q.lose()
	q.mu.Lock()
	q.leader, q.epoch = true, 2
	q.mu.Unlock()
	if r := answer(t, a); code(r.err) != kerr.NotController.Code {
		t.Fatalf("create a: %+v", r)
	}
	q.mu.Lock()
	q.hold = false
	q.mu.Unlock()
	if r := answer(t, startCreate(c, "a")); r.err != nil || r.code != 0 {
		t.Fatalf("create a in epoch 2: %+v", r)
	}
}

// A record that reaches the log on the leader from anyone but the active
// side (here a test writing straight to the quorum) is not in the
// speculative image; once replayed, the image is rebuilt, so validation
// sees it.
func TestForeignRecordRebuildsTheSpeculativeImage(t *testing.T) {
	c, q, _ := newTestController(t, 27)
	register(t, c, q, 1)
	q.write([]metadata.Record{&metadata.TopicRecord{Name: "foreign", TopicId: metadata.Uuid{0: 9, 15: 9}}})
	if r := answer(t, startCreate(c, "foreign")); r.err != nil || r.code != kerr.TopicAlreadyExists.Code {
		t.Fatalf("create foreign: %+v, want TOPIC_ALREADY_EXISTS", r)
	}
}

// Registrations of new incarnations in flight together each get the offset
// of their own first record as broker epoch, and later operations validate
// against those epochs before anything has committed.
func TestRegistrationsInFlightGetTheirOwnOffsets(t *testing.T) {
	c, q := pipelineCluster(t)
	type reg struct {
		epoch int64
		err   error
	}
	results := map[int32]chan reg{}
	for i, id := range []int32{2, 3} {
		ch := make(chan reg, 1)
		results[id] = ch
		go func() {
			e, err := c.RegisterBroker(context.Background(), registration(id, 1))
			ch <- reg{e, err}
		}()
		waitHeld(t, q, i+1)
	}
	// Broker 3's producer-id allocation is checked against the epoch it
	// was given before its registration has committed.
	q.mu.Lock()
	want3 := q.held[1].first
	q.mu.Unlock()
	alloc := make(chan error, 1)
	go func() {
		_, _, err := c.AllocateProducerIDs(context.Background(), 3, want3)
		alloc <- err
	}()
	waitHeld(t, q, 3)
	q.commit(3)
	for id, ch := range results {
		r := <-ch
		if r.err != nil {
			t.Fatalf("register %d: %v", id, r.err)
		}
		b := c.image.Brokers[id]
		if r.epoch != b.BrokerEpoch {
			t.Errorf("broker %d: answered epoch %d, committed %d", id, r.epoch, b.BrokerEpoch)
		}
		if _, ok := q.log[r.epoch].(*metadata.RegisterBrokerRecord); !ok {
			t.Errorf("broker %d: epoch %d is the offset of a %T", id, r.epoch, q.log[r.epoch])
		}
	}
	if err := <-alloc; err != nil {
		t.Fatalf("AllocateProducerIDs for broker 3: %v", err)
	}
}
