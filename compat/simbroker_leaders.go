package compat

import (
	"slices"
	"sync"
	"time"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

// partitionKey names one partition of the metadata image.
type partitionKey struct {
	topic     [16]byte
	partition int32
}

// LeaderTracker decodes the metadata batches a fleet's watcher fetches and
// keeps who leads each partition, so that a benchmark can tell when every
// partition a failed broker led is led by another, and when the fleet had
// fetched that change. It reads PartitionRecord, PartitionChangeRecord and
// the fencing records; everything else is skipped.
type LeaderTracker struct {
	mu      sync.Mutex
	leader  map[partitionKey]int32
	ledBy   map[int32]int // broker id (or -1: none) -> partitions it leads
	away    *awayWatch
	jumps   int // times the watcher skipped to a snapshot's end undecoded
	badRecs int // records that did not decode
}

// awayWatch is one wait for partitions to leave a set of failed brokers.
type awayWatch struct {
	failed    map[int32]bool
	fencedAt  time.Time // max timestamp of the first batch that fenced one or moved a leader off one
	ledAt     time.Time // max timestamp of the batch after which none leads
	fetchedAt time.Time // when the watcher received that batch
	done      chan struct{}
}

// NewLeaderTracker returns an empty tracker.
func NewLeaderTracker() *LeaderTracker {
	return &LeaderTracker{leader: map[partitionKey]int32{}, ledBy: map[int32]int{}}
}

// Partitions is how many partitions the tracker knows.
func (t *LeaderTracker) Partitions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.leader)
}

// LedBy is how many partitions broker id leads (-1: how many have none).
func (t *LeaderTracker) LedBy(id int32) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ledBy[id]
}

// TopLeader is the broker leading the most partitions among candidates.
func (t *LeaderTracker) TopLeader(candidates []int32) int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.MaxFunc(candidates, func(a, b int32) int { return t.ledBy[a] - t.ledBy[b] })
}

// Skipped reports whether the watcher ever jumped over records it did not
// decode (a snapshot), after which the tracker's view may be stale.
func (t *LeaderTracker) Skipped() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.jumps + t.badRecs
}

// LeadAway is the outcome of WatchLeadAway.
type LeadAway struct {
	Led     int // partitions the failed brokers led when the watch began
	Fenced  time.Time
	LedAt   time.Time
	Fetched time.Time
	Offline int // partitions with no leader at the end
}

// WatchLeadAway starts watching for every partition led by a broker of
// failed to be led by another; wait returns once that happened (or the
// timeout passed, with an error). Call it before the brokers fail.
func (t *LeaderTracker) WatchLeadAway(failed []int32) (led int, wait func(timeout time.Duration) (LeadAway, error)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := &awayWatch{failed: map[int32]bool{}, done: make(chan struct{})}
	for _, id := range failed {
		w.failed[id] = true
		led += t.ledBy[id]
	}
	t.away = w
	return led, func(timeout time.Duration) (LeadAway, error) {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case <-w.done:
		case <-timer.C:
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.away = nil
		out := LeadAway{Led: led, Fenced: w.fencedAt, LedAt: w.ledAt, Fetched: w.fetchedAt, Offline: t.ledBy[-1]}
		if w.ledAt.IsZero() {
			left := 0
			for id := range w.failed {
				left += t.ledBy[id]
			}
			return out, errorf("after %v, %d partitions still led by the %d failed brokers (fenced at %v)", timeout, left, len(w.failed), w.fencedAt)
		}
		return out, nil
	}
}

// skipped notes a jump to a snapshot's end; nil-safe.
func (t *LeaderTracker) skipped(int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.jumps++
}

// apply decodes the batches fetched; nil-safe.
func (t *LeaderTracker) apply(raw []byte) {
	if t == nil {
		return
	}
	received := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = batch.Walk(raw, func(h batch.Header, b []byte) error {
		if h.IsControl() {
			return nil
		}
		decoded, err := batch.Decode(b)
		if err != nil {
			t.badRecs++
			return nil
		}
		for _, r := range decoded.Records {
			rec, err := metadata.DecodeValue(r.Value)
			if err != nil {
				t.badRecs++
				continue
			}
			t.applyRecord(rec, h)
		}
		t.checkAway(h, received)
		return nil
	})
}

func (t *LeaderTracker) applyRecord(rec metadata.Record, h batch.Header) {
	setLeader := func(k partitionKey, leader int32) {
		if old, ok := t.leader[k]; ok {
			t.ledBy[old]--
			if w := t.away; w != nil && w.failed[old] && w.fencedAt.IsZero() {
				w.fencedAt = time.UnixMilli(h.MaxTimestamp)
			}
		}
		t.leader[k] = leader
		t.ledBy[leader]++
	}
	fenced := int32(-1)
	switch r := rec.(type) {
	case *metadata.PartitionRecord:
		setLeader(partitionKey{r.TopicId, r.PartitionId}, r.Leader)
	case *metadata.PartitionChangeRecord:
		if r.Leader != -2 {
			setLeader(partitionKey{r.TopicId, r.PartitionId}, r.Leader)
		}
	case *metadata.FenceBrokerRecord:
		fenced = r.Id
	case *metadata.BrokerRegistrationChangeRecord:
		if r.Fenced == 1 {
			fenced = r.BrokerId
		}
	}
	if w := t.away; w != nil && fenced >= 0 && w.failed[fenced] && w.fencedAt.IsZero() {
		w.fencedAt = time.UnixMilli(h.MaxTimestamp)
	}
}

// checkAway ends the watch once no failed broker leads a partition.
func (t *LeaderTracker) checkAway(h batch.Header, received time.Time) {
	w := t.away
	if w == nil || w.fencedAt.IsZero() || !w.ledAt.IsZero() {
		return
	}
	for id := range w.failed {
		if t.ledBy[id] > 0 {
			return
		}
	}
	w.ledAt, w.fetchedAt = time.UnixMilli(h.MaxTimestamp), received
	close(w.done)
}
