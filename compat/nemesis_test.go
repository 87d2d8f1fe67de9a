package compat

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// A nemesis run makes members of a three-node quorum fail silently under
// writes, each fault once per round: pauses, partitions both ways and one
// way, and a stalled disk, of the leader and of a follower. `make chaos`
// sets KRAFTD_NEMESIS_ROUNDS for a longer run; make test runs one round.
const (
	// nemesisTakeover bounds the wait for a survivor to take over from a
	// failed leader: a bound on progress, not a measure of speed.
	nemesisTakeover = time.Minute
	// nemesisFollowerHold is how long a follower's fault lasts.
	nemesisFollowerHold = 1500 * time.Millisecond
)

// nemesisStep is one fault of a round, of the leader or of a follower.
type nemesisStep struct {
	fault  Fault
	leader bool
}

var nemesisRound = []nemesisStep{
	{FaultPause, true}, {FaultPause, false},
	{FaultPartition, true}, {FaultPartition, false},
	{FaultMute, true}, {FaultMute, false},
	{FaultDisk, true}, {FaultDisk, false},
}

// TestNemesisKraftdQuorum runs a nemesis round on three kraftd controllers
// from the race-detector build.
func TestNemesisKraftdQuorum(t *testing.T) {
	t.Parallel()
	members, clusterID, n := NewNemesisQuorum(t, MixedOptions{
		Kinds: []string{KindKraftd, KindKraftd, KindKraftd}, KraftdRace: true})
	runNemesis(t, members, clusterID, n)
	CheckNoDataRace(t, members)
}

// TestNemesisMixedQuorum runs it on two kraftd controllers beside an
// Apache controller of the newest 4.x.
func TestNemesisMixedQuorum(t *testing.T) {
	t.Parallel()
	v := Versions[len(Versions)-1]
	KafkaCache(t, v)
	ReserveJVMs(t, 1)
	members, clusterID, n := NewNemesisQuorum(t, MixedOptions{Version: v,
		Kinds: []string{KindKraftd, KindKraftd, KindApache}, KraftdRace: true})
	runNemesis(t, members, clusterID, n)
	CheckNoDataRace(t, members)
}

// nemesisRounds is KRAFTD_NEMESIS_ROUNDS, 1 by default.
func nemesisRounds(t *testing.T) int {
	v := os.Getenv("KRAFTD_NEMESIS_ROUNDS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("KRAFTD_NEMESIS_ROUNDS=%q: want a positive integer", v)
	}
	return n
}

// runNemesis injects each fault of nemesisRound, rounds times. Before each
// the quorum is whole and caught up; a failed leader must be replaced
// within nemesisTakeover, a follower's fault lasts nemesisFollowerHold; then
// the fault ends. Afterwards every acknowledged write must be in every log
// and the history linearizable.
func runNemesis(t *testing.T, members []*MixedMember, clusterID string, n *Nemesis) {
	c := StartChaosCluster(t, members, clusterID, chaosWriters)
	c.Nemesis = n
	began := time.Now()
	healed := time.Now()
	for round := range nemesisRounds(t) {
		for _, step := range nemesisRound {
			cur := c.Healthy(t, healed)
			victim := MemberByID(members, cur.LeaderID)
			if !step.leader {
				victim = Without(members, victim)[round%2]
			}
			r, heal := c.Inject(t, step.fault, victim, cur, nemesisTakeover)
			if !r.WasLeader {
				time.Sleep(nemesisFollowerHold)
			}
			heal()
			healed = time.Now()
			switch {
			case !r.WasLeader:
				t.Logf("%s of follower %s (epoch %d) for %v", step.fault, victim, r.Epoch, nemesisFollowerHold)
			case r.ToLeader == 0 || r.ToWrite == 0:
				t.Errorf("%s of leader %s (epoch %d): no survivor led and acknowledged a write within %v (%s)",
					step.fault, victim, r.Epoch, nemesisTakeover, c.History.Summary())
			default:
				t.Logf("%s of leader %s (epoch %d): new leader after %v, first write after %v", step.fault, victim, r.Epoch,
					r.ToLeader.Round(time.Millisecond), r.ToWrite.Round(time.Millisecond))
			}
		}
	}
	t.Logf("%d faults in %v", nemesisRounds(t)*len(nemesisRound), time.Since(began).Round(time.Second))
	checkChaosHistory(t, c)
}
