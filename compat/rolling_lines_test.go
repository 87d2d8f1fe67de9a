//go:build matrix

package compat

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/kraftd/kraftd/controller"
)

// The rolling upgrades across release lines (make matrix; too long for
// make test). Both start from a cluster with two brokers, a replicated
// topic and acks=all traffic that runs throughout; nothing acknowledged
// may be lost and the brokers must keep serving at every step.

// rollingProps are every controller's extra settings: longer election
// and request timeouts and election backoff than the harness's, with
// which three 3.9 controllers (no pre-vote), whose every vote waits on an
// fsync that took seconds on the loaded test machine, kept splitting
// their votes for minutes.
var rollingProps = map[string]string{
	"controller.quorum.election.timeout.ms":     "4000",
	"controller.quorum.election.backoff.max.ms": "4000",
	"controller.quorum.request.timeout.ms":      "10000",
	"controller.quorum.fetch.timeout.ms":        "8000",
}

// oldestLine and newestLine are the ends of Lines.
var oldestLine, newestLine = Lines[0], Lines[len(Lines)-1]

// An Apache 3.9 cluster upgraded to 4.4 with kraftd as its controllers:
// three 3.9 controllers (formatted at 3.9-IV0, the line's default) are
// replaced one at a time by kraftd on each node's own directory and node
// id, so kraftd reads the files Apache wrote; the two 3.9 brokers are
// rolled to 4.4 one at a time (a broker refuses a metadata.version it does
// not support, so they go before the level moves); metadata.version is
// raised a release at a time, 4.0 to 4.4 (4.4-IV2), with kafka-features;
// then the kraftd quorum is handed to three Apache 4.4 controllers one at
// a time, each reusing kraftd's directory.
func TestRollingUpgradeFromOldestLine(t *testing.T) {
	t.Parallel()
	KafkaCache(t, oldestLine)
	KafkaCache(t, newestLine)
	ReserveJVMs(t, JVMBudget)
	at := stamp(t)
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Version: oldestLine,
		Kinds: []string{KindApache, KindApache, KindApache}, ReleaseVersion: ApacheDefaultRelease, Props: rollingProps})
	startRollingCluster(t, members)
	voters := MixedVoters(members)
	brokers := startRollingBrokers(t, oldestLine, voters, clusterID)
	traffic := startReplicatedTraffic(t, brokers)
	at(fmt.Sprintf("Apache %s quorum and brokers serving", oldestLine))

	for _, m := range members {
		replaceController(t, members, m, brokers, traffic, func() { becomeKraftd(t, m, voters) })
		at(fmt.Sprintf("%s took over node %d's directory", m, m.ID))
	}
	checkSameFinalized(t, members, defaultLevels[oldestLine])

	for _, b := range brokers.Brokers {
		rollBroker(t, brokers, b, newestLine, traffic)
		at(fmt.Sprintf("broker %d rolled to %s", b.NodeID, newestLine))
	}

	for _, release := range []string{"4.0", "4.1", "4.2", "4.3", "4.4"} {
		leader := MemberByID(members, WaitMixedLeader(t, members, nil).LeaderID)
		out, err := Features(t, newestLine, "--bootstrap-controller", leader.Addr(), "upgrade", "--metadata", release)
		if err != nil {
			t.Fatalf("upgrade --metadata %s: %v\n%s", release, err, out)
		}
		level := defaultLevels[lineVersion(release)]
		if want := fmt.Sprintf("metadata.version was upgraded to %d.", level); !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(out) {
			t.Errorf("upgrade --metadata %s printed %q, want %q", release, out, want)
		}
		checkSameFinalized(t, members, level)
		mark := traffic.Mark()
		traffic.WaitProgress("at metadata.version "+controller.MetadataVersionName(level), mark, 100)
		at(fmt.Sprintf("metadata.version %s on every controller; brokers serving", controller.MetadataVersionName(level)))
	}
	brokers.WaitUnfenced(t, brokers.IDs()...)

	for _, m := range members {
		replaceController(t, members, m, brokers, traffic, func() { becomeApache(t, m, newestLine, voters) })
		at(fmt.Sprintf("%s took over kraftd's directory of node %d", m, m.ID))
	}
	checkSameFinalized(t, members, defaultLevels[newestLine])
	n := traffic.StopAndVerify()
	at(fmt.Sprintf("%d acknowledged records all read back", n))
	final := WaitMixedLeader(t, members, VotersCaughtUp(0))
	final = WaitMixedLeader(t, members, VotersCaughtUp(final.HighWatermark))
	StopMixed(members...)
	checkSameCommittedBatches(t, members, final.HighWatermark)
	checkNoApacheFault(t, members)
}

// A quorum formatted by kraftd at 4.4 (its bootstrap in its own layout)
// with two 4.4 brokers, handed to Apache 4.4 controllers one node at a
// time on kraftd's directories, and back to kraftd.
func TestRollingHandoverKraftdToNewestLine(t *testing.T) {
	t.Parallel()
	KafkaCache(t, newestLine)
	ReserveJVMs(t, JVMBudget)
	at := stamp(t)
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Version: newestLine,
		Kinds: []string{KindKraftd, KindKraftd, KindKraftd}, ReleaseVersion: ReleaseLine(newestLine), Props: rollingProps})
	startRollingCluster(t, members)
	voters := MixedVoters(members)
	brokers := startRollingBrokers(t, newestLine, voters, clusterID)
	traffic := startReplicatedTraffic(t, brokers)
	at("kraftd quorum and brokers serving")
	for _, m := range members {
		replaceController(t, members, m, brokers, traffic, func() { becomeApache(t, m, newestLine, voters) })
		at(fmt.Sprintf("%s took over kraftd's directory of node %d", m, m.ID))
	}
	checkSameFinalized(t, members, defaultLevels[newestLine])
	for _, m := range members {
		replaceController(t, members, m, brokers, traffic, func() { becomeKraftd(t, m, voters) })
		at(fmt.Sprintf("%s took the directory back", m))
	}
	n := traffic.StopAndVerify()
	at(fmt.Sprintf("%d acknowledged records all read back", n))
	final := WaitMixedLeader(t, members, VotersCaughtUp(0))
	final = WaitMixedLeader(t, members, VotersCaughtUp(final.HighWatermark))
	StopMixed(members...)
	checkSameCommittedBatches(t, members, final.HighWatermark)
	checkNoApacheFault(t, members)
}

// startRollingCluster starts the controllers and waits, each with its own
// bound, until every one listens (a JVM took two minutes to on the loaded
// machine) and then for a leader.
func startRollingCluster(t *testing.T, members []*MixedMember) {
	t.Helper()
	StartMixed(t, members...)
	for _, m := range members {
		WaitAPIVersions(t, m.Addr(), m.Proc())
	}
	WaitMixedLeader(t, members, VotersCaughtUp(1))
}

// startRollingBrokers is StartBrokers for brokers 101 and 102, waiting for
// each to listen before waiting for them to be unfenced.
func startRollingBrokers(t *testing.T, version, voters, clusterID string) *BrokerSet {
	t.Helper()
	s := &BrokerSet{Version: version}
	for _, id := range []int{101, 102} {
		b := NewApacheBroker(t, version, id, voters, nil)
		b.Format(t, clusterID)
		s.Brokers = append(s.Brokers, b)
	}
	for _, b := range s.Brokers {
		b.Start(t)
	}
	for _, b := range s.Brokers {
		WaitAPIVersions(t, b.Addr(), b.Proc)
	}
	s.WaitUnfenced(t, s.IDs()...)
	return s
}

// lineVersion is the version of Lines in a release line ("4.2" -> "4.2.2").
func lineVersion(line string) string {
	for _, v := range Lines {
		if ReleaseLine(v) == line {
			return v
		}
	}
	return ""
}

// startReplicatedTraffic creates a topic of two partitions replicated on
// both brokers and starts acks=all traffic on it.
func startReplicatedTraffic(t *testing.T, brokers *BrokerSet) *Traffic {
	t.Helper()
	CreateTopic(t, brokers.Addrs()[0], trafficTopic, 2, 2, map[string]string{"min.insync.replicas": "1"})
	brokers.WaitPartitions(t, "traffic topic ready", trafficTopic, fullIsr(brokers.IDs()))
	traffic := StartTraffic(t, brokers.Addrs(), trafficTopic, 2)
	traffic.WaitProgress("start", traffic.Mark(), 100)
	return traffic
}

// replaceController stops m gracefully, lets swap change what runs on its
// directory, starts it again and waits until it has caught up, the brokers
// are unfenced and the traffic moves.
func replaceController(t *testing.T, members []*MixedMember, m *MixedMember, brokers *BrokerSet, traffic *Traffic, swap func()) {
	t.Helper()
	WaitMixedLeader(t, members, VotersCaughtUp(0))
	m.Proc().Stop()
	swap()
	m.Start(t)
	WaitAPIVersions(t, m.Addr(), m.Proc())
	s := WaitMixedLeader(t, Without(members, m), nil)
	WaitMixedLeader(t, members, VotersCaughtUp(s.HighWatermark))
	brokers.WaitUnfenced(t, brokers.IDs()...)
	mark := traffic.Mark()
	traffic.WaitProgress(fmt.Sprintf("after %s started on node %d's directory", m, m.ID), mark, 100)
}

// becomeKraftd makes the (stopped) member a kraftd controller with the same
// node id, listener and metadata.log.dir.
func becomeKraftd(t *testing.T, m *MixedMember, voters string) {
	t.Helper()
	m.Apache, m.proc, m.Kind = nil, nil, KindKraftd
	props := map[string]string{"controller.quorum.voters": voters}
	maps.Copy(props, rollingProps)
	m.conf = WriteKraftdConfig(t, m.ID, m.Addr(), m.Dir, props)
}

// becomeApache makes the (stopped) member an Apache controller of version
// with the same node id, listener and directory.
func becomeApache(t *testing.T, m *MixedMember, version, voters string) {
	t.Helper()
	n := NewApacheController(t, ApacheOptions{Version: version, NodeID: int(m.ID), Port: m.Port, Voters: voters, Props: rollingProps})
	n.Dir = m.Dir
	n.Props["log.dirs"], n.Props["metadata.log.dir"] = m.Dir, m.Dir
	writeFile(t, n.Config, []byte(FormatProperties(n.Props)))
	m.Apache, m.proc, m.Kind = n, nil, KindApache
}

// rollBroker restarts a broker on its own directory as Apache version and
// waits until it is unfenced, back in every ISR, and the traffic moves.
func rollBroker(t *testing.T, brokers *BrokerSet, b *ApacheBroker, version string, traffic *Traffic) {
	t.Helper()
	b.Proc.Stop()
	b.Version, b.Proc = version, nil
	if _, err := os.Stat(filepath.Join(b.Dir, "meta.properties")); err != nil {
		t.Fatal(err)
	}
	b.Start(t)
	WaitAPIVersions(t, b.Addr(), b.Proc)
	brokers.WaitUnfenced(t, brokers.IDs()...)
	brokers.WaitPartitions(t, fmt.Sprintf("broker %d back in the ISR", b.NodeID), trafficTopic, fullIsr(brokers.IDs()))
	mark := traffic.Mark()
	traffic.WaitProgress(fmt.Sprintf("broker %d on %s", b.NodeID, version), mark, 100)
}

// checkNoApacheFault fails the test if an Apache member logged a metadata
// fault or a kraftd member rejected a record.
func checkNoApacheFault(t *testing.T, members []*MixedMember) {
	t.Helper()
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

func init() { matrixBuild = true }
