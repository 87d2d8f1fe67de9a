package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/controller"
)

// defaultLevels is the metadata.version each Apache line's storage tool
// formats by default (its MetadataVersion.LATEST_PRODUCTION).
var defaultLevels = map[string]int16{"3.9.2": 21, "4.0.2": 25, "4.1.2": 27, "4.2.2": 29, "4.3.2": 30, "4.4.0": 33}

// smokeLines are the lines the smoke set runs for: every one of Lines but
// 4.1.x, whose default level (4.1-IV1) the full scenario set runs at. make
// test runs the newest line only (the other lines cost about a quarter of
// its time); make matrix runs them all.
func smokeLines() []string {
	if !matrixBuild {
		return Lines[len(Lines)-1:]
	}
	var out []string
	for _, v := range Lines {
		if ReleaseLine(v) != "4.1" {
			out = append(out, v)
		}
	}
	return out
}

// The smoke set of one Apache release line, on one cluster: two Apache
// controllers of that line and one kraftd in a static quorum, formatted by
// each tool at the line's own default metadata.version (3.9-IV0, 4.0-IV3,
// 4.2-IV1, 4.3-IV0, 4.4-IV2, with every other feature at Apache's default),
// agree on the finalized levels; an Apache broker of the line registers
// and serves produce and consume; the lead passes between Apache and
// kraftd by SIGKILL until each has led twice (kraftd, leading, serves the
// broker and creates a topic), while nothing acknowledged is lost; kafka-metadata-quorum and
// kafka-features of the line describe the quorum through kraftd; both
// dump tools read the logs; and the line's kafka-metadata-shell, where
// Maven Central serves it (3.9, 4.0, 4.3), reads kraftd's newest
// snapshot, gzipped. For 4.2, 4.3 and 4.4 this is also the proof
// that a cluster formatted at their default level takes a kraftd
// controller.
func TestReleaseLineSmoke(t *testing.T) {
	t.Parallel()
	for _, v := range smokeLines() {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			KafkaCache(t, v)
			ReserveJVMs(t, 3) // two Apache controllers, one broker
			runReleaseLineSmoke(t, v, defaultLevels[v])
		})
	}
}

func runReleaseLineSmoke(t *testing.T, v string, wantMV int16) {
	at := stamp(t)
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Version: v, Kinds: []string{KindApache, KindApache, KindKraftd},
		ReleaseVersion: ApacheDefaultRelease,
		// Small, so that kraftd writes a snapshot for the metadata shell.
		KraftdProps: map[string]string{"metadata.log.max.record.bytes.between.snapshots": "2000"}})
	StartMixed(t, members...)
	cur := WaitMixedLeader(t, members, func(s *QuorumStatus) error {
		if s.HighWatermark <= 0 {
			return fmt.Errorf("leader %d: high watermark %d", s.LeaderID, s.HighWatermark)
		}
		return nil
	})
	at(fmt.Sprintf("first leader %s", MemberByID(members, cur.LeaderID)))
	checkSameFinalized(t, members, wantMV)

	brokers := StartBrokers(t, v, MixedVoters(members), clusterID, []int{101}, nil)
	CreateTopic(t, brokers.Addrs()[0], trafficTopic, 2, 1, nil)
	brokers.WaitPartitions(t, "traffic topic ready", trafficTopic, fullIsr(brokers.IDs()))
	traffic := StartTraffic(t, brokers.Addrs(), trafficTopic, 2)
	traffic.WaitProgress("start", traffic.Mark(), 100)
	at("broker serving produce and consume")

	// Each implementation leads at least twice: the first leader counts,
	// and every later one, whether a kill made it or it took over by
	// itself.
	handovers := map[string]int{}
	led := map[string]int{MemberByID(members, cur.LeaderID).Kind: 1}
	for round := 1; led[KindApache] < 2 || led[KindKraftd] < 2; round++ {
		if round > maxFailovers {
			t.Fatalf("after %d leader kills the leaders were %v (handovers %v); want each kind twice", maxFailovers, led, handovers)
		}
		// The lead may have moved by itself since the last round (a 3.9
		// follower, without pre-vote, starts an election whenever it misses
		// the leader for a fetch timeout, as it does on a loaded machine):
		// count such a handover too, and steer from the current leader.
		prevLeader := MemberByID(members, cur.LeaderID)
		cur = WaitMixedLeader(t, members, VotersCaughtUp(0))
		leader := MemberByID(members, cur.LeaderID)
		if leader != prevLeader {
			handovers[prevLeader.Kind+"->"+leader.Kind]++
			led[leader.Kind]++
			at(fmt.Sprintf("round %d: the lead moved by itself from %s to %s", round, prevLeader, leader))
		}
		want := KindKraftd
		if leader.Kind == KindKraftd {
			want = KindApache
		}
		mark := traffic.Mark()
		cur = steerAndKill(t, members, leader, want, cur)
		next := MemberByID(members, cur.LeaderID)
		handovers[leader.Kind+"->"+next.Kind]++
		led[next.Kind]++
		traffic.WaitProgress(fmt.Sprintf("round %d, %s leading", round, next), mark, 100)
		topic := fmt.Sprintf("round-%d", round)
		CreateTopic(t, brokers.Addrs()[0], topic, 1, 1, nil)
		brokers.WaitPartitions(t, topic+" ready", topic, fullIsr(brokers.IDs()))
		leader.Start(t)
		// A JVM restarting under load may take most of ReadyTimeout to
		// listen; its catch-up is awaited from then on.
		WaitAPIVersions(t, leader.Addr(), leader.Proc())
		cur = WaitMixedLeader(t, members, VotersCaughtUp(cur.HighWatermark))
		at(fmt.Sprintf("round %d: killed %s, %s led and wrote %s; %s caught up again", round, leader, next, topic, leader))
	}
	n := traffic.StopAndVerify()
	brokers.WaitUnfenced(t, brokers.IDs()...)
	checkSameFinalized(t, members, wantMV)
	at(fmt.Sprintf("leaders %v, handovers %v; %d acknowledged records all read back", led, handovers, n))
	kraftd := firstOfKind(members, KindKraftd)
	checkMetadataQuorumTool(t, v, kraftd, clusterID, members)
	checkFeaturesTool(t, v, kraftd, wantMV)
	at("kafka-metadata-quorum and kafka-features through kraftd")
	waitKraftdSnapshot(t, kraftd)
	final := WaitMixedLeader(t, members, VotersCaughtUp(cur.HighWatermark))
	StopMixed(members...)
	checkSameCommittedBatches(t, members, final.HighWatermark)
	checkDumpTools(t, v, members)
	at("stopped; committed logs identical and dumped")
	if checkMetadataShell(t, v, kraftd, wantMV) {
		at("the line's kafka-metadata-shell read kraftd's snapshot")
	}
	for _, m := range members {
		out := m.Proc().Output()
		if m.Kind == KindKraftd {
			if r := regexp.MustCompile(`(?m)^.*skipping a record the image rejects.*$`).FindString(out); r != "" {
				t.Errorf("%s rejected a record: %s", m, r)
			}
		} else if f := apacheFault.FindString(out); f != "" {
			t.Errorf("%s logged a metadata fault: %s", m, f)
		}
	}
}

// checkSameFinalized waits until every member answers ApiVersions with the
// same finalized features, metadata.version at wantMV, and logs them.
func checkSameFinalized(t *testing.T, members []*MixedMember, wantMV int16) {
	t.Helper()
	var seen string
	Eventually(t, ReadyTimeout, "the same finalized features on every member", nil, func() error {
		first := ""
		for _, m := range members {
			resp, err := APIVersions(m.Addr())
			if err != nil {
				return err
			}
			levels := map[string]int16{}
			for _, f := range resp.FinalizedFeatures {
				levels[f.Name] = f.MaxVersionLevel
			}
			if levels[controller.MetadataVersionFeature] != wantMV {
				return fmt.Errorf("%s: finalized %v, want metadata.version %d", m, levels, wantMV)
			}
			got := fmt.Sprint(levels)
			if first == "" {
				first = got
			} else if got != first {
				return fmt.Errorf("%s finalized %s, another member %s", m, got, first)
			}
		}
		seen = first
		return nil
	})
	t.Logf("finalized on every member: %s", seen)
}

// checkFeaturesTool runs kafka-features describe of version through via:
// metadata.version is finalized at wantMV by its release name. (The tool
// asks whichever controller it reaches first for the supported ranges, so
// they are not checked here; an older tool prints kraftd's maximum, level
// 33, as "UNKNOWN 33".)
func checkFeaturesTool(t *testing.T, version string, via *MixedMember, wantMV int16) {
	t.Helper()
	out, err := Features(t, version, "--bootstrap-controller", via.Addr(), "describe")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kafka-features %s --bootstrap-controller %s describe:\n%s", version, via, out)
	name := regexp.QuoteMeta(controller.MetadataVersionName(wantMV))
	if !regexp.MustCompile(`Feature: metadata.version\s+SupportedMinVersion: \S+\s+SupportedMaxVersion: (UNKNOWN \d+|\S+)\s+FinalizedVersionLevel: ` + name + `\b`).MatchString(out) {
		t.Errorf("kafka-features describe through %s does not show metadata.version finalized at %s", via, controller.MetadataVersionName(wantMV))
	}
}

// waitKraftdSnapshot waits until the kraftd member has written a snapshot
// besides the bootstrap one.
func waitKraftdSnapshot(t *testing.T, kraftd *MixedMember) {
	t.Helper()
	Eventually(t, ReadyTimeout, kraftd.String()+" writes a snapshot", kraftd.Proc(), func() error {
		if len(SnapshotFiles(t, kraftd.LogDir())) == 0 {
			return fmt.Errorf("no snapshot in %s yet", kraftd.LogDir())
		}
		return nil
	})
}

// ShipsMetadataShell reports whether the fetched jars of version hold the
// metadata shell (kafka-shell): Maven Central serves none for 4.2.2 and
// 4.4.0 (scripts/fetch-kafka.sh).
func ShipsMetadataShell(t testing.TB, version string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(KafkaCache(t, version), "libs", "kafka-shell-"+version+".jar"))
	return err == nil
}

// checkMetadataShell runs the line's kafka-metadata-shell on the stopped
// kraftd member's newest snapshot, whose data batches are gzipped: it must
// load it, find metadata.version at wantMV and the traffic topic. It
// reports false, logging why, when the line ships no shell.
func checkMetadataShell(t *testing.T, version string, kraftd *MixedMember, wantMV int16) bool {
	t.Helper()
	if !ShipsMetadataShell(t, version) {
		t.Logf("Apache %s ships no metadata shell on Maven Central; kraftd's logs were read by kafka-dump-log only", version)
		return false
	}
	snaps := SnapshotFiles(t, kraftd.LogDir())
	snapshot := snaps[len(snaps)-1]
	mustGzippedSnapshot(t, snapshot) // so every line's reader inflates kraftd's batches
	for _, c := range []struct{ path, want string }{
		{"/image/features/metadataVersion", controller.MetadataVersionName(wantMV)},
		{"/image/topics/byName", trafficTopic},
	} {
		cmd := "cat"
		if !strings.HasPrefix(c.path, "/image/features") {
			cmd = "ls"
		}
		// The shell runs its command once its loader has applied a record,
		// which can be before its own view of the image is built (it then
		// prints Optional.empty for metadataVersion): a race in the tool,
		// seen on a loaded machine, so a miss is tried again.
		for try := 1; ; try++ {
			out, stderr, err := RunTool(t, version, MainMetadataShell, "--snapshot", snapshot, cmd, c.path)
			if err == nil && strings.Contains(out, c.want) {
				break
			}
			if try < 3 {
				t.Logf("kafka-metadata-shell %s %s %s, try %d: %v, %q; trying again", version, cmd, c.path, try, err, strings.TrimSpace(out))
				continue
			}
			t.Errorf("kafka-metadata-shell %s on kraftd's %s, %s %s (try %d): %v, want %q in\n%s\nstderr:\n%s",
				version, filepath.Base(snapshot), cmd, c.path, try, err, c.want, out, stderr)
			break
		}
	}
	return true
}
