package nodetest

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage/batch"
)

// EventKind names what the loop did, as node.Observer reports it.
type EventKind uint8

// The kinds of Event.
const (
	HardStateWritten EventKind = iota
	Truncated
	Appended
	SnapshotInstalled
	Replayed
	// Sent: a message left through the transport (a request to a peer or
	// an answer to a delivered request), so a test can see what left
	// before or after what was written.
	Sent
)

// Event is one thing the loop did to the disk or the state machine.
type Event struct {
	Kind      EventKind
	HardState quorum.HardState  // HardStateWritten
	Offset    int64             // Truncated: the new log end; Replayed: the end replayed to
	Batches   []byte            // Appended
	Snapshot  quorum.SnapshotID // SnapshotInstalled
	Message   quorum.Message    // Sent
}

func (e Event) String() string {
	switch e.Kind {
	case HardStateWritten:
		return fmt.Sprintf("quorum-state epoch=%d voted=%d leader=%d", e.HardState.LeaderEpoch, e.HardState.VotedID, e.HardState.LeaderID)
	case Truncated:
		return fmt.Sprintf("truncated to %d", e.Offset)
	case Appended:
		n := 0
		_, _ = batch.Walk(e.Batches, func(batch.Header, []byte) error { n++; return nil })
		return fmt.Sprintf("appended %d batches", n)
	case SnapshotInstalled:
		return fmt.Sprintf("installed snapshot %d@%d", e.Snapshot.EndOffset, e.Snapshot.Epoch)
	case Replayed:
		return fmt.Sprintf("replayed to %d", e.Offset)
	case Sent:
		return fmt.Sprintf("sent to %d", e.Message.To)
	}
	return "event?"
}

// transport puts the node's requests into its outbox, each with the
// endpoint the node last gave for its peer, so the test's network can
// route those it knows no id for (quorum.BootstrapID).
type transport struct{ h *Node }

func (t transport) Send(to int32, reqID uint64, req kmsg.Request) {
	m := quorum.Message{From: t.h.cfg.ID, To: to, ReqID: reqID, Request: req}
	if ep, ok := t.h.endpoints[to]; ok {
		m.Endpoint = &ep
	}
	t.h.send(m)
}

// SetEndpoints implements node.Endpoints.
func (t transport) SetEndpoints(id int32, endpoints []quorum.Endpoint) {
	if len(endpoints) > 0 {
		t.h.endpoints[id] = endpoints[0]
	}
}

func (t transport) MaxVersion(peer int32, key int16) (int16, bool) {
	if t.h.cfg.PeerVersion == nil {
		return 0, false
	}
	return t.h.cfg.PeerVersion(peer, key)
}

type clock struct{ h *Node }

func (c clock) Now() time.Time { return time.UnixMilli(c.h.now) }

// syncer keeps the leader's deferred fsync until Process or the test
// releases it; the loop's Wait runs it at once.
type syncer struct{ h *Node }

func (s syncer) Start(job node.SyncJob) { s.h.sync = &job }

func (s syncer) Wait() error {
	s.h.sync = nil
	return s.h.disk.Log.Sync()
}

// RunNow is a node.Executor that runs background work on the caller, at
// once: a snapshot is written before the loop goes on.
func RunNow(_ node.Urgency, work func() error) <-chan error {
	done := make(chan error, 1)
	done <- work()
	return done
}

type observer struct{ h *Node }

func (o observer) add(e Event) { o.h.events = append(o.h.events, e) }

func (o observer) HardStateWritten(hs quorum.HardState) {
	o.add(Event{Kind: HardStateWritten, HardState: hs})
}

func (o observer) Truncated(to int64) { o.add(Event{Kind: Truncated, Offset: to}) }

func (o observer) Appended(batches []byte) {
	o.add(Event{Kind: Appended, Batches: append([]byte(nil), batches...)})
	// A slow disk: the append and the fsync that follows it take this
	// long on the node's clock, which moves without a tick (SlowNextAppend).
	o.h.now += o.h.slowAppendMs
	o.h.slowAppendMs = 0
}

func (o observer) SnapshotInstalled(id quorum.SnapshotID) {
	o.add(Event{Kind: SnapshotInstalled, Snapshot: id})
}

func (o observer) Replayed(end int64) { o.add(Event{Kind: Replayed, Offset: end}) }
