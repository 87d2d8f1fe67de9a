package compat

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// Chaos runs kill controllers of a three-node quorum under writes: random
// members and leaders, each restarted after a short pause, then every log
// is checked against what was acknowledged.
const (
	chaosRandomKills = 30
	chaosLeaderKills = 20
	chaosWriters     = 3
)

// TestChaosKraftdQuorum runs the chaos schedule on three kraftd controllers
// from the race-detector build.
func TestChaosKraftdQuorum(t *testing.T) {
	t.Parallel()
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{
		Kinds: []string{KindKraftd, KindKraftd, KindKraftd}, KraftdRace: true})
	runChaos(t, members, clusterID)
	CheckNoDataRace(t, members)
}

// TestChaosMixedQuorum runs it on one kraftd beside two Apache controllers
// of the newest 4.x.
func TestChaosMixedQuorum(t *testing.T) {
	t.Parallel()
	v := Versions[len(Versions)-1]
	KafkaCache(t, v)
	ReserveJVMs(t, 2)
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Version: v,
		Kinds: []string{KindKraftd, KindApache, KindApache}, KraftdRace: true})
	runChaos(t, members, clusterID)
	CheckNoDataRace(t, members)
}

// runChaos kills chaosRandomKills random members and chaosLeaderKills
// leaders, in a shuffled order, waiting before each kill until the quorum
// is whole and caught up (so that one kill never costs the majority), and
// restarting each victim after up to 300 ms.
func runChaos(t *testing.T, members []*MixedMember, clusterID string) {
	c := StartChaosCluster(t, members, clusterID, chaosWriters)
	schedule := make([]bool, 0, chaosRandomKills+chaosLeaderKills) // true: kill the leader
	for i := range cap(schedule) {
		schedule = append(schedule, i < chaosLeaderKills)
	}
	rand.Shuffle(len(schedule), func(i, j int) { schedule[i], schedule[j] = schedule[j], schedule[i] })
	began := time.Now()
	var failovers []time.Duration
	killed := map[string]int{}
	restarted := time.Now()
	for i, leaderKill := range schedule {
		cur := c.Healthy(t, restarted)
		victim := members[rand.N(len(members))]
		if leaderKill {
			victim = MemberByID(members, cur.LeaderID)
		}
		r := c.Kill(t, victim, cur)
		killed[victim.Kind]++
		if r.WasLeader {
			failovers = append(failovers, r.ToWrite)
			t.Logf("kill %d: leader %s (epoch %d): new leader after %v, first write after %v",
				i+1, victim, r.Epoch, r.ToLeader.Round(time.Millisecond), r.ToWrite.Round(time.Millisecond))
		} else {
			t.Logf("kill %d: follower %s (epoch %d)", i+1, victim, r.Epoch)
		}
		time.Sleep(time.Duration(rand.N(300)) * time.Millisecond)
		victim.Start(t)
		restarted = time.Now()
	}
	t.Logf("%d kills in %v (%v); %d of them leaders", len(schedule), time.Since(began).Round(time.Second), killed, len(failovers))
	sort.Slice(failovers, func(a, b int) bool { return failovers[a] < failovers[b] })
	if n := len(failovers); n > 0 {
		t.Logf("leader kill to a survivor's first acknowledged write: min %v, median %v, max %v",
			failovers[0].Round(time.Millisecond), failovers[n/2].Round(time.Millisecond), failovers[n-1].Round(time.Millisecond))
	}
	checkChaosHistory(t, c)
}

// checkChaosHistory stops the run and fails the test if an acknowledged
// write is missing from a log, the history is not linearizable, or nothing
// was acknowledged.
func checkChaosHistory(t *testing.T, c *ChaosCluster) {
	t.Helper()
	lost, nonLinearizable := c.StopAndCheck(t)
	t.Logf("writes: %s; acknowledged writes missing from a log: %d", c.History.Summary(), len(lost))
	if c.History.Acknowledged() == 0 {
		t.Error("no write was acknowledged: the run checked nothing")
	}
	for _, err := range lost {
		t.Error(err)
	}
	if nonLinearizable != nil {
		t.Error(nonLinearizable)
	}
}
