package compat

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// failoverPoll is how often a chaos run asks who leads, and how soon its
// writers look again for a leader they lost: well under the failover times
// being measured.
const failoverPoll = 2 * time.Millisecond

// chaosWriteTimeout bounds a chaos write: one sent to a leader that was
// paused or cut off must not hold its writer for long (its outcome is then
// unknown, which the history allows for).
const chaosWriteTimeout = 5 * time.Second

// ChaosCluster is a three-controller quorum (kraftd, Apache or both) under
// writes and kills. Three simulated brokers stay registered and unfenced so
// that topics have somewhere to go; writers create topics and register new
// brokers, each write acknowledged only once committed; the caller kills
// and restarts controllers; StopAndCheck then holds every log against the
// history.
type ChaosCluster struct {
	Members   []*MixedMember
	ClusterID string
	History   *WriteHistory
	// Nemesis is the means of the silent faults (NewNemesisQuorum); nil
	// allows only SIGKILL.
	Nemesis *Nemesis

	fleet     *SimFleet
	cancel    context.CancelFunc
	writers   sync.WaitGroup
	nextOp    atomic.Int64
	nextProbe atomic.Int64
	nextID    atomic.Int32
}

// StartChaosCluster starts members (formatted, not yet started), waits for
// a leader, starts the brokers and then writers goroutines.
func StartChaosCluster(t testing.TB, members []*MixedMember, clusterID string, writers int) *ChaosCluster {
	t.Helper()
	StartMixed(t, members...)
	c := &ChaosCluster{Members: members, ClusterID: clusterID, History: NewWriteHistory()}
	c.Healthy(t, time.Time{})
	voters := map[int32]string{}
	for _, m := range members {
		voters[m.ID] = m.Addr()
	}
	// Broker ids apart from the controllers' 1-3: the fleet's watcher
	// fetches as the first broker, and one sharing a voter's id would count
	// as that voter toward the high watermark (checkFleetIDs).
	fleet, err := StartSimFleet(clusterID, voters, 101, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Stop)
	fleet.Locator().PollEvery(failoverPoll)
	if _, err := fleet.WaitUnfenced(ReadyTimeout); err != nil {
		t.Fatalf("simulated brokers: %v (%s)", err, fleet.Errors())
	}
	c.fleet = fleet
	c.nextID.Store(10_000) // registrations use ids far above the fleet's
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	t.Cleanup(c.stopWriters)
	for range writers {
		c.writers.Add(1)
		go func() {
			defer c.writers.Done()
			c.write(ctx)
		}()
	}
	return c
}

func (c *ChaosCluster) stopWriters() {
	c.cancel()
	c.writers.Wait()
}

// write sends writes until ctx ends: three topic creates for each broker
// registration, a few milliseconds apart. Two consecutive creates name the
// same topic, so writers race to create it, and a create whose answer was
// lost is often tried again by another writer.
func (c *ChaosCluster) write(ctx context.Context) {
	var conn *Conn
	var addr string
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for ctx.Err() == nil {
		sleepCtx(ctx, time.Duration(2+rand.N(4))*time.Millisecond)
		if rand.N(4) == 0 {
			c.register(ctx)
			continue
		}
		if conn == nil {
			var err error
			if addr, _, err = c.fleet.Locator().Leader(ctx); err != nil {
				continue
			}
			if conn, err = Dial(ctx, addr); err != nil {
				c.fleet.Locator().Invalidate(addr)
				conn = nil
				continue
			}
		}
		name := fmt.Sprintf("chaos-%d", c.nextOp.Add(1)/2)
		op := c.History.CallCreate(name)
		wctx, cancel := context.WithTimeout(ctx, chaosWriteTimeout)
		answer, err := CreateTopic1(wctx, conn, name, 1, 1)
		cancel()
		c.History.AnswerCreate(op, addr, answer.ErrorCode, answer.TopicID, err)
		if err != nil || answer.ErrorCode == kerr.NotController.Code {
			conn.Close()
			conn = nil
			c.fleet.Locator().Invalidate(addr)
		}
	}
}

// register registers a broker under a new id, on a connection of its own.
func (c *ChaosCluster) register(ctx context.Context) {
	b, err := newSimBroker(c.fleet, c.nextID.Add(1))
	if err != nil {
		return
	}
	defer b.disconnect()
	err = b.register(ctx)
	var code *kerr.Error
	switch {
	case err == nil:
		c.History.Registered(b.connAddr, b.ID, b.Epoch)
	case b.conn == nil && b.connAddr == "":
		// It never reached a controller: nothing was sent.
	case !errors.As(err, &code) || code == kerr.NotController || code == kerr.RequestTimedOut || code == kerr.UnknownServerError:
		c.History.RegistrationUnknown()
	}
}

// Healthy waits until a leader has committed in its epoch and every voter
// has caught up to its high watermark, each by a fetch made after since
// (the last restart: a leader's figures for a voter that has just
// restarted may still be those from before its kill), and returns what the
// leader said.
func (c *ChaosCluster) Healthy(t testing.TB, since time.Time) *QuorumStatus {
	t.Helper()
	return WaitMixedLeader(t, c.Members, func(s *QuorumStatus) error {
		if len(s.Voters) != len(c.Members) {
			return fmt.Errorf("voters %v", s.Voters)
		}
		for _, v := range s.Resp.Topics[0].Partitions[0].CurrentVoters {
			if v.ReplicaID != s.LeaderID && v.LastCaughtUpTimestamp < since.UnixMilli() {
				return fmt.Errorf("voter %d last caught up at %d, before %d", v.ReplicaID, v.LastCaughtUpTimestamp, since.UnixMilli())
			}
		}
		return VotersCaughtUp(s.HighWatermark)(s)
	})
}

// FaultRound is one fault of a chaos run.
type FaultRound struct {
	Victim    *MixedMember
	Fault     Fault
	WasLeader bool
	Epoch     int32         // the leader epoch when the fault began
	ToLeader  time.Duration // a leader's fault to a survivor leading a later epoch (0: none within the wait)
	ToWrite   time.Duration // a leader's fault to the first write a survivor acknowledged (0: none within the wait)
}

// Inject makes victim fail as f says, the quorum being as cur describes,
// and returns the round and what ends the fault, which the caller calls.
// When the victim led, it first waits, up to wait, for a survivor to lead
// a later epoch and to acknowledge a write, and measures both from the
// fault; those that did not come within wait are 0.
func (c *ChaosCluster) Inject(t testing.TB, f Fault, victim *MixedMember, cur *QuorumStatus, wait time.Duration) (FaultRound, func()) {
	t.Helper()
	r := FaultRound{Victim: victim, Fault: f, WasLeader: victim.ID == cur.LeaderID, Epoch: cur.LeaderEpoch}
	at := time.Now()
	heal := c.inject(t, f, victim)
	if !r.WasLeader {
		return r, heal
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var probes sync.WaitGroup
	survivors := Without(c.Members, victim)
	for _, m := range survivors {
		probes.Go(func() { c.probeWrites(ctx, m.Addr()) })
	}
	r.ToLeader = awaitLaterLeader(ctx, MixedAddrs(survivors...), cur.LeaderEpoch, at)
	for r.ToWrite == 0 && ctx.Err() == nil {
		if ack, ok := c.History.FirstAckAfter(at, victim.Addr()); ok {
			r.ToWrite = ack.Sub(at)
		} else {
			sleepCtx(ctx, failoverPoll)
		}
	}
	cancel()
	probes.Wait()
	return r, heal
}

// Kill SIGKILLs victim, the quorum being as cur describes, and fails the
// test if it led and no survivor took over within ReadyTimeout. The caller
// restarts the victim.
func (c *ChaosCluster) Kill(t testing.TB, victim *MixedMember, cur *QuorumStatus) FaultRound {
	t.Helper()
	r, _ := c.Inject(t, FaultKill, victim, cur, ReadyTimeout)
	if r.WasLeader && (r.ToLeader == 0 || r.ToWrite == 0) {
		failNow(t, "no survivor led and acknowledged a write %v after the SIGKILL of leader %s (%s)", ReadyTimeout, victim, c.History.Summary())
	}
	return r
}

// awaitLaterLeader asks each survivor, each on its own goroutine and
// every failoverPoll, until one says it leads an epoch after epoch, and
// returns how long after since that answer came (0 if none did before ctx
// ended). Asking them one after another would add one survivor's slowness
// to the other's answer.
func awaitLaterLeader(ctx context.Context, survivors []string, epoch int32, since time.Time) time.Duration {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found := make(chan time.Duration, len(survivors))
	for _, addr := range survivors {
		go func() {
			for ctx.Err() == nil {
				if s, err := DescribeQuorum(addr); err == nil && s.LeaderEpoch > epoch && s.LeaderID >= 0 {
					found <- time.Since(since)
					return
				}
				sleepCtx(ctx, failoverPoll)
			}
		}()
	}
	select {
	case d := <-found:
		return d
	case <-ctx.Done():
		return 0
	}
}

// StopAndCheck stops the writers and brokers, waits until every voter holds
// everything committed, stops the controllers, reads each one's log from
// its files and checks it against the history (WriteHistory.Check).
func (c *ChaosCluster) StopAndCheck(t testing.TB) (lost []error, nonLinearizable error) {
	t.Helper()
	c.stopWriters()
	c.fleet.Stop()
	// Every acknowledged write is below this high watermark, and every
	// voter's log matches the leader's up to it.
	end := c.Healthy(t, time.Now()).HighWatermark
	StopMixed(c.Members...)
	logs := make([]NodeLog, 0, len(c.Members))
	for _, m := range c.Members {
		logs = append(logs, ReadNodeLog(t, m, end))
	}
	return c.History.Check(logs)
}

// ReadNodeLog folds a stopped member's log below end into its topics and
// broker registrations. The log must start at offset 0: a run short
// enough for a test never snapshots or cleans.
func ReadNodeLog(t testing.TB, m *MixedMember, end int64) NodeLog {
	t.Helper()
	if base := FirstSegmentBase(t, m.LogDir()); base != 0 {
		t.Fatalf("%s: the log starts at %d, not 0: it was cleaned, and the check needs every record", m, base)
	}
	l := NodeLog{Node: m.ID, Topics: map[string]string{}, Brokers: map[int32][]int64{}}
	byID := map[string]string{}
	for _, r := range DumpMetadataLog(t, m.Dir) {
		if r.Offset >= end {
			break
		}
		switch r.Type {
		case "TopicRecord":
			l.Topics[r.String("name")] = r.String("topicId")
			byID[r.String("topicId")] = r.String("name")
		case "RemoveTopicRecord":
			delete(l.Topics, byID[r.String("topicId")])
		case "RegisterBrokerRecord":
			id := int32(r.Int("brokerId"))
			l.Brokers[id] = append(l.Brokers[id], r.Int("brokerEpoch"))
		}
	}
	return l
}

// CheckNoDataRace fails the test if a member run from the race-detector
// build reported a data race.
func CheckNoDataRace(t testing.TB, members []*MixedMember) {
	t.Helper()
	for _, m := range members {
		if p := m.Proc(); p != nil && strings.Contains(p.Output(), "WARNING: DATA RACE") {
			t.Errorf("%s hit a data race:\n%s", m, p.Output())
		}
	}
}
