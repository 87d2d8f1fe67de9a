package compat

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// maxFailovers bounds the SIGKILL rounds of the failover scenario. Each
// round steers the election (see steerAndKill), so three rounds normally
// give both implementations their two terms; the bound only stops a quorum
// that keeps electing the other node.
const maxFailovers = 8

// One kraftd and two Apache controllers in a static quorum.
func TestMixedStaticOneKraftd(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 3) // two controllers and the tools
		runMixedFailover(t, v, []string{KindKraftd, KindApache, KindApache})
	})
}

// Two kraftd and one Apache controller in a static quorum.
func TestMixedStaticTwoKraftd(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 2) // one controller and the tools
		runMixedFailover(t, v, []string{KindKraftd, KindKraftd, KindApache})
	})
}

// runMixedFailover elects a leader, then SIGKILLs the leader (restarting it
// once another leads) until both implementations have led at least twice.
// Under each leader it isolates a voter of the other implementation
// (SIGSTOP past the fetch timeout, then SIGCONT) and checks that the
// leader keeps its epoch (pre-vote). At the end it checks that every node
// holds the same committed batches, that both dump tools read every node's
// log, and that Apache's kafka-metadata-quorum, asked through an Apache
// node, sees every voter caught up.
func runMixedFailover(t *testing.T, version string, kinds []string) {
	at := stamp(t)
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Version: version, Kinds: kinds})
	at("formatted")
	StartMixed(t, members...)

	led := map[string]int{}
	isolated := map[string]bool{} // leader kinds whose pre-vote check ran
	cur := WaitMixedLeader(t, members, func(s *QuorumStatus) error {
		if s.HighWatermark <= 0 {
			return fmt.Errorf("leader %d: high watermark %d", s.LeaderID, s.HighWatermark)
		}
		return nil
	})
	leader := MemberByID(members, cur.LeaderID)
	led[leader.Kind]++
	at(fmt.Sprintf("first leader: %s, epoch %d, high watermark %d", leader, cur.LeaderEpoch, cur.HighWatermark))

	for round := 1; ; round++ {
		if !isolated[leader.Kind] {
			var ok bool
			if cur, ok = checkIsolatedVoterRejoins(t, members, leader, cur); ok {
				isolated[leader.Kind] = true
				at(fmt.Sprintf("pre-vote: %s kept epoch %d while a voter of the other kind was isolated and came back", leader, cur.LeaderEpoch))
			} else {
				leader = MemberByID(members, cur.LeaderID)
				led[leader.Kind]++
				continue
			}
		}
		if led[KindKraftd] >= 2 && led[KindApache] >= 2 && isolated[KindKraftd] && isolated[KindApache] {
			break
		}
		if round > maxFailovers {
			t.Fatalf("after %d SIGKILL rounds kraftd led %d times and Apache %d times; want 2 each", maxFailovers, led[KindKraftd], led[KindApache])
		}
		want := KindKraftd
		if led[KindApache] < led[KindKraftd] {
			want = KindApache
		}
		if survivors := Without(members, leader); firstOfKind(survivors, want) == nil {
			want = survivors[0].Kind // the leader was the only one of that kind
		}
		prev := cur
		cur = steerAndKill(t, members, leader, want, prev)
		next := MemberByID(members, cur.LeaderID)
		led[next.Kind]++
		at(fmt.Sprintf("round %d: killed %s; new leader %s (wanted %s), epoch %d, high watermark %d", round, leader, next, want, cur.LeaderEpoch, cur.HighWatermark))

		leader.Start(t)
		cur = WaitMixedLeader(t, members, VotersCaughtUp(cur.HighWatermark))
		if cur.LeaderID != next.ID {
			// An election happened while the node restarted: count it too.
			next = MemberByID(members, cur.LeaderID)
			led[next.Kind]++
			at(fmt.Sprintf("round %d: leadership moved on to %s, epoch %d", round, next, cur.LeaderEpoch))
		}
		at(fmt.Sprintf("round %d: %s restarted and caught up to %d", round, leader, cur.HighWatermark))
		leader = next
	}

	cur = checkGracefulHandover(t, members, leader, cur)
	at(fmt.Sprintf("graceful stop of %s: %s leads epoch %d", leader, MemberByID(members, cur.LeaderID), cur.LeaderEpoch))

	apache := firstOfKind(members, KindApache)
	checkMetadataQuorumTool(t, version, apache, clusterID, members)
	at("kafka-metadata-quorum through an Apache node")
	checkStatusMixed(t, members, clusterID)
	at("kraftd status asked every controller")

	final := WaitMixedLeader(t, members, VotersCaughtUp(0))
	final = WaitMixedLeader(t, members, VotersCaughtUp(final.HighWatermark))
	StopMixed(members...)
	at(fmt.Sprintf("stopped; comparing logs below %d", final.HighWatermark))
	checkSameCommittedBatches(t, members, final.HighWatermark)
	checkDumpTools(t, version, members)
	at("logs compared and dumped")
}

// steerAndKill SIGKILLs the leader so that a survivor of kind want (if
// there is one) is elected, and returns the new leader's status. Left alone,
// the survivor whose fetch timeout runs out last tends to win (the first
// one's pre-vote is refused by the other, which still follows the dead
// leader, and it then grants the other's pre-vote); that is timing, so
// instead the other survivor is made to lag: it is paused (SIGSTOP) until
// the leader reports the wanted one ahead of it, and resumed right after
// the kill. A voter whose log is behind cannot win a pre-vote.
func steerAndKill(t *testing.T, members []*MixedMember, leader *MixedMember, want string, prev *QuorumStatus) *QuorumStatus {
	t.Helper()
	survivors := Without(members, leader)
	winner, lagger := survivors[0], survivors[1]
	if winner.Kind != want && lagger.Kind == want {
		winner, lagger = lagger, winner
	}
	if err := lagger.Proc().Pause(); err != nil {
		t.Fatal(err)
	}
	// The paused node may still hold an answer to its last fetch in its
	// socket; that answer left the leader at most one fetch wait (500 ms)
	// after the fetch. So once the leader has not heard from it for longer,
	// the leader's own log end bounds what it can hold, and the winner must
	// pass that bound.
	bar := int64(-1)
	Eventually(t, ReadyTimeout, fmt.Sprintf("%s ahead of the paused %s", winner, lagger), nil, func() error {
		s, err := DescribeQuorum(leader.Addr())
		if err != nil {
			return err
		}
		self, _ := ReplicaState(s, leader.ID)
		w, _ := ReplicaState(s, winner.ID)
		l, _ := ReplicaState(s, lagger.ID)
		if bar < 0 {
			if self.LastFetchTimestamp-l.LastFetchTimestamp < 1000 {
				return fmt.Errorf("%s last fetched %d ms ago", lagger, self.LastFetchTimestamp-l.LastFetchTimestamp)
			}
			bar = self.LogEndOffset
		}
		if w.LogEndOffset <= bar {
			return fmt.Errorf("%s at %d, %s holds at most %d", winner, w.LogEndOffset, lagger, bar)
		}
		return nil
	})
	leader.Kill()
	if err := lagger.Proc().Resume(); err != nil {
		t.Fatal(err)
	}
	return WaitMixedLeader(t, survivors, func(s *QuorumStatus) error {
		if s.LeaderEpoch <= prev.LeaderEpoch || s.HighWatermark <= prev.HighWatermark {
			return fmt.Errorf("leader %d epoch %d high watermark %d: not past epoch %d, high watermark %d yet",
				s.LeaderID, s.LeaderEpoch, s.HighWatermark, prev.LeaderEpoch, prev.HighWatermark)
		}
		return nil
	})
}

// isolationMs is how long, by the leader's own clock, an isolated voter
// must have gone without fetching: past the fetch timeout (2000 ms), so it
// rejoins as a prospective candidate, and past check-quorum's 1.5x.
const isolationMs = 3500

// checkIsolatedVoterRejoins pauses a follower of the other implementation
// than the leader's until the leader has not heard from it for isolationMs,
// resumes it, waits until it has caught up, and checks the leader kept its
// id and epoch throughout: the rejoining voter's pre-vote must fail against
// a follower that still hears from the leader (KIP-996). It returns the
// leader's status and whether the check could be made: on a loaded machine
// the other follower may itself miss the fetch timeout and the leader
// resign (check-quorum); that is told apart from a pre-vote failure by the
// rejoining voter's own log, which then shows no candidacy.
func checkIsolatedVoterRejoins(t *testing.T, members []*MixedMember, leader *MixedMember, cur *QuorumStatus) (*QuorumStatus, bool) {
	t.Helper()
	var follower *MixedMember
	for _, m := range members {
		if m.Kind != leader.Kind {
			follower = m
		}
	}
	if err := follower.Proc().Pause(); err != nil {
		t.Fatal(err)
	}
	Eventually(t, ReadyTimeout, fmt.Sprintf("%s isolated for %d ms", follower, isolationMs), nil, func() error {
		for _, m := range members {
			if exited, err := m.Proc().Exited(); exited {
				t.Fatalf("%s exited (%v) while %s was isolated", m, err, follower)
			}
		}
		s, err := DescribeQuorum(leader.Addr())
		if err != nil {
			return err
		}
		self, _ := ReplicaState(s, leader.ID)
		f, _ := ReplicaState(s, follower.ID)
		if self.LastFetchTimestamp-f.LastFetchTimestamp < isolationMs {
			return fmt.Errorf("%s last fetched %d ms ago", follower, self.LastFetchTimestamp-f.LastFetchTimestamp)
		}
		return nil
	})
	mark := len(follower.Proc().Output())
	if err := follower.Proc().Resume(); err != nil {
		t.Fatal(err)
	}
	var target int64 = -1
	var caughtUp *QuorumStatus
	moved := false
	Eventually(t, ReadyTimeout, fmt.Sprintf("%s rejoins", follower), follower.Proc(), func() error {
		s, err := DescribeQuorum(leader.Addr())
		if err != nil || s.LeaderID != leader.ID || s.LeaderEpoch != cur.LeaderEpoch {
			// The leader answers DescribeQuorum only while it leads.
			moved = true
			return nil
		}
		if target < 0 {
			target = s.HighWatermark
		}
		f, _ := ReplicaState(s, follower.ID)
		if f.LogEndOffset < target {
			return fmt.Errorf("%s at %d, want %d", follower, f.LogEndOffset, target)
		}
		caughtUp = s
		return nil
	})
	if !moved {
		return caughtUp, true
	}
	after := follower.Proc().Output()[mark:]
	if strings.Contains(after, `"role":"Candidate"`) || strings.Contains(after, "Completed transition to CandidateState") {
		t.Fatalf("pre-vote: %s lost its leadership of epoch %d when %s rejoined, and %s stood as a candidate:\n%s",
			leader, cur.LeaderEpoch, follower, follower, grepLines(after, "andidate", 5))
	}
	t.Logf("%s lost its leadership of epoch %d for another reason while %s was isolated (it never stood as a candidate); the check is repeated under the next leader", leader, cur.LeaderEpoch, follower)
	return WaitMixedLeader(t, members, VotersCaughtUp(0)), false
}

// checkGracefulHandover stops the leader with SIGTERM: it resigns and sends
// EndQuorumEpoch, and a follower takes over in a higher epoch. A kraftd
// follower logs the EndQuorumEpoch it received from either implementation;
// at least one must have received it.
// The old leader is restarted and every voter catches up.
func checkGracefulHandover(t *testing.T, members []*MixedMember, leader *MixedMember, cur *QuorumStatus) *QuorumStatus {
	t.Helper()
	rest := Without(members, leader)
	marks := map[*MixedMember]int{}
	for _, m := range rest {
		marks[m] = len(m.Proc().Output())
	}
	if err := leader.Proc().Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-leader.Proc().Done():
	case <-time.After(3 * StopTimeout):
		t.Fatalf("%s did not stop within %v of SIGTERM", leader, 3*StopTimeout)
	}
	next := WaitMixedLeader(t, rest, func(s *QuorumStatus) error {
		if s.LeaderEpoch <= cur.LeaderEpoch {
			return fmt.Errorf("leader %d epoch %d", s.LeaderID, s.LeaderEpoch)
		}
		return nil
	})
	// A resigning Apache leader stops once any voter has taken over
	// (KafkaRaftClient.maybeCompleteShutdown: hasRemoteLeader), so an
	// EndQuorumEpoch still waiting on a reconnect to a voter that restarted
	// recently is never sent. One kraftd survivor must have received it.
	var got, missed []string
	for _, m := range rest {
		if m.Kind != KindKraftd {
			continue
		}
		if strings.Contains(m.Proc().Output()[marks[m]:], "received EndQuorumEpoch") {
			got = append(got, m.String())
		} else {
			missed = append(missed, m.String())
		}
	}
	switch {
	case len(got) == 0 && len(missed) > 0:
		t.Errorf("no kraftd survivor (%s) logged the EndQuorumEpoch of the resigning %s", strings.Join(missed, ", "), leader)
	case len(missed) > 0:
		t.Logf("%s logged the EndQuorumEpoch of the resigning %s; %s learned the new epoch from the election", strings.Join(got, ", "), leader, strings.Join(missed, ", "))
	}
	leader.Start(t)
	return WaitMixedLeader(t, members, VotersCaughtUp(next.HighWatermark))
}

func firstOfKind(members []*MixedMember, kind string) *MixedMember {
	for _, m := range members {
		if m.Kind == kind {
			return m
		}
	}
	return nil
}

// checkSameCommittedBatches compares every member's batches below hw with
// the first member's: followers copy the leader's batches unchanged, so
// committed history is identical byte for byte, whoever wrote it.
func checkSameCommittedBatches(t *testing.T, members []*MixedMember, hw int64) {
	t.Helper()
	want, from := BatchesBelow(t, members[0].LogDir(), hw)
	if len(want) == 0 || from != 0 {
		t.Fatalf("%s holds no batches from offset 0 below %d (first at %d)", members[0], hw, from)
	}
	for _, m := range members[1:] {
		got, gotFrom := BatchesBelow(t, m.LogDir(), hw)
		if gotFrom != from || !bytes.Equal(got, want) {
			t.Errorf("%s holds %d bytes of batches below %d (from %d); %s holds %d (from %d): committed history differs",
				m, len(got), hw, gotFrom, members[0], len(want), from)
		}
	}
}

// checkDumpTools decodes every member's segments with kraftd dump-log (no
// record may be undecodable: the Apache leaders' records included) and
// every kraftd member's segments with Apache's kafka-dump-log.
func checkDumpTools(t *testing.T, version string, members []*MixedMember) {
	t.Helper()
	for _, m := range members {
		segs := SegmentFiles(t, m.LogDir())
		out := KraftdDumpLog(t, segs...)
		for _, bad := range []string{"Undecodable", "UnknownControl"} {
			if strings.Contains(out, bad) {
				t.Errorf("kraftd dump-log of %s's segments shows %s records:\n%s", m, bad, grepLines(out, bad, 5))
			}
		}
		for _, want := range []string{"LeaderChangeMessage", "FeatureLevelRecord", "NoOpRecord", "RegisterControllerRecord"} {
			if !strings.Contains(out, want) {
				t.Errorf("kraftd dump-log of %s's segments shows no %s", m, want)
			}
		}
		if m.Kind != KindKraftd {
			continue
		}
		apacheOut := ApacheDumpLog(t, version, segs...)
		for _, bad := range []string{"Exception", "Error", "error"} {
			if strings.Contains(apacheOut, bad) {
				t.Errorf("kafka-dump-log %s of %s's segments reports %q:\n%s", version, m, bad, grepLines(apacheOut, bad, 5))
			}
		}
		// 3.9 prints a leader change as "controlType: LEADER_CHANGE(2)".
		if !strings.Contains(apacheOut, "LeaderChange") && !strings.Contains(apacheOut, "LEADER_CHANGE") {
			t.Errorf("kafka-dump-log %s of %s's segments shows no LeaderChange record", version, m)
		}
	}
}

func grepLines(out, word string, limit int) string {
	var hits []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, word) && len(hits) < limit {
			hits = append(hits, line)
		}
	}
	return strings.Join(hits, "\n")
}

// replicationRow matches a row of `describe --replication`: node id,
// directory id, log end offset, lag, last fetch, last caught up, status.
var replicationRow = regexp.MustCompile(`^(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(-?\d+)\s+(-?\d+)\s+(Leader|Follower|Observer)\s*$`)

// checkMetadataQuorumTool runs kafka-metadata-quorum against an Apache node
// of the mixed quorum: --status names the cluster and all voters, and
// --replication shows every voter caught up (lag 0; the leader writes a
// NoOp every 500 ms, so a row may lag for a moment and is asked again).
func checkMetadataQuorumTool(t *testing.T, version string, via *MixedMember, clusterID string, members []*MixedMember) {
	t.Helper()
	status, err := MetadataQuorum(t, version, "--bootstrap-controller", via.Addr(), "describe", "--status")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kafka-metadata-quorum --bootstrap-controller %s describe --status:\n%s", via, status)
	got := statusLines(status)
	if got["ClusterId"] != clusterID {
		t.Errorf("ClusterId %q, want %q", got["ClusterId"], clusterID)
	}
	for _, m := range members {
		if !strings.Contains(got["CurrentVoters"], fmt.Sprintf(`"id": %d`, m.ID)) {
			t.Errorf("CurrentVoters %q lacks %s", got["CurrentVoters"], m)
		}
	}
	var last string
	for attempt := 0; attempt < 4; attempt++ {
		out, err := MetadataQuorum(t, version, "--bootstrap-controller", via.Addr(), "describe", "--replication")
		if err != nil {
			t.Fatal(err)
		}
		last = out
		if lagging := replicationLagging(out, members); lagging == "" {
			t.Logf("kafka-metadata-quorum describe --replication:\n%s", out)
			return
		}
	}
	t.Errorf("kafka-metadata-quorum describe --replication never showed every voter caught up: %s\n%s", replicationLagging(last, members), last)
}

// replicationLagging says which voter is missing or lagging in a
// --replication table, or "" when all are caught up.
func replicationLagging(out string, members []*MixedMember) string {
	rows := map[int32][]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := replicationRow.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			id, _ := strconv.Atoi(m[1])
			rows[int32(id)] = m
		}
	}
	for _, m := range members {
		r, ok := rows[m.ID]
		switch {
		case !ok:
			return fmt.Sprintf("%s has no row", m)
		case r[7] == "Observer":
			return fmt.Sprintf("%s is listed as an observer", m)
		case r[4] != "0":
			return fmt.Sprintf("%s lags by %s", m, r[4])
		case r[6] == "-1":
			return fmt.Sprintf("%s has never caught up", m)
		}
	}
	return ""
}
