package compat

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DynamicBrokerProps are the broker settings for a dynamic quorum: no
// controller.quorum.voters, the controllers found through
// controller.quorum.bootstrap.servers (comma-separated host:port).
func DynamicBrokerProps(bootstrap string) map[string]string {
	return map[string]string{
		"controller.quorum.voters":            "",
		"controller.quorum.bootstrap.servers": bootstrap,
	}
}

// AddController runs `kafka-metadata-quorum --bootstrap-controller
// bootstrap --command-config <joiner's properties> add-controller`, which
// reads the joiner's node id, listener and directory id and asks the
// active controller to add it. It fails the test unless the tool reports it.
func AddController(t testing.TB, version, bootstrap string, joiner *MixedMember) {
	t.Helper()
	out, err := MetadataQuorum(t, version, "--bootstrap-controller", bootstrap, "--command-config", joiner.Config(), "add-controller")
	if err != nil {
		t.Fatalf("add-controller %s: %v", joiner, err)
	}
	if !strings.Contains(out, fmt.Sprintf("Added controller %d", joiner.ID)) {
		t.Fatalf("add-controller %s printed %q", joiner, out)
	}
}

// RemoveController runs `kafka-metadata-quorum --bootstrap-controller
// bootstrap remove-controller --controller-id id --controller-directory-id
// dir`, members being the controllers that stay. It fails the test unless
// the tool reports the removal. An Apache leader can end itself on its own
// removal race before it answers (apacheRemovalFault): then the wait for a
// leader among members restarts it, and the removal is asked again unless
// it had committed.
func RemoveController(t testing.TB, version, bootstrap string, members []*MixedMember, id int32, dir string) {
	t.Helper()
	remove := func() (string, error) {
		return MetadataQuorum(t, version, "--bootstrap-controller", bootstrap, "remove-controller",
			"--controller-id", fmt.Sprint(id), "--controller-directory-id", dir)
	}
	out, err := remove()
	if err != nil && slices.ContainsFunc(members, (*MixedMember).endedOnRemovalFault) {
		t.Logf("remove-controller %d failed with its Apache leader ended on Apache's removal race: %v", id, err)
		if !slices.Contains(WaitMixedLeader(t, members, nil).Voters, id) {
			return
		}
		out, err = remove()
	}
	if err != nil {
		t.Fatalf("remove-controller %d: %v", id, err)
	}
	if !strings.Contains(out, fmt.Sprintf("KRaft controller %d", id)) {
		t.Fatalf("remove-controller %d printed %q", id, out)
	}
}

// ObservesAs is a WaitLeader acceptor: the leader lists an observer with
// node id id and directory id dir (as meta.properties spells it). The
// directory matters when a node id comes back on a new directory: a
// leader keeps listing an observer for a while after it stopped fetching.
func ObservesAs(id int32, dir string) func(*QuorumStatus) error {
	return func(s *QuorumStatus) error {
		for _, o := range s.Resp.Topics[0].Partitions[0].Observers {
			if o.ReplicaID == id && base64.RawURLEncoding.EncodeToString(o.ReplicaDirectoryID[:]) == dir {
				return nil
			}
		}
		return errorf("leader %d: observers %v, want %d with directory %s", s.LeaderID, s.Observers, id, dir)
	}
}

// ToolStatus is what `kafka-metadata-quorum describe --status` printed:
// the leader and the ids in its CurrentVoters and CurrentObservers lines.
type ToolStatus struct {
	LeaderID  int32
	Voters    []int32 // sorted
	Observers []int32 // sorted
	Text      string  // the whole output
}

// statusLines parses `kafka-metadata-quorum describe --status` output
// ("Key: value" lines) into a map.
func statusLines(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// quorumNodesLine matches a "CurrentVoters: [...]" or "CurrentObservers:
// [...]" line; Apache prints each as a JSON array of {"id": ...} objects.
var quorumNodesLine = regexp.MustCompile(`(?m)^(CurrentVoters|CurrentObservers):\s*(\[.*\])\s*$`)

// DescribeStatus runs `kafka-metadata-quorum describe --status` against
// bootstrap and parses it.
func DescribeStatus(t testing.TB, version, bootstrap string) ToolStatus {
	t.Helper()
	out, err := MetadataQuorum(t, version, "--bootstrap-controller", bootstrap, "describe", "--status")
	if err != nil {
		t.Fatalf("%v\nwhat the controllers answer to DescribeCluster: %s", err, controllersListed(strings.Split(bootstrap, ",")))
	}
	st := ToolStatus{LeaderID: -1, Text: out}
	if _, err := fmt.Sscan(statusLines(out)["LeaderId"], &st.LeaderID); err != nil {
		t.Fatalf("describe --status: no LeaderId: %v\n%s", err, out)
	}
	for _, m := range quorumNodesLine.FindAllStringSubmatch(out, -1) {
		var nodes []struct {
			ID int32 `json:"id"`
		}
		if err := json.Unmarshal([]byte(m[2]), &nodes); err != nil {
			t.Fatalf("describe --status: %s: %v\n%s", m[1], err, out)
		}
		var ids []int32
		for _, n := range nodes {
			ids = append(ids, n.ID)
		}
		slices.Sort(ids)
		if m[1] == "CurrentVoters" {
			st.Voters = ids
		} else {
			st.Observers = ids
		}
	}
	return st
}

// controllersListed says, for a failure report, what each address
// answers to DescribeCluster for controllers (what the admin client of
// kafka-metadata-quorum bootstraps from).
func controllersListed(addrs []string) string {
	var b strings.Builder
	for _, a := range addrs {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(1)
		req.EndpointType = 2
		r, err := Request(a, req)
		if err != nil {
			fmt.Fprintf(&b, "\n%s: %v", a, err)
			continue
		}
		resp := r.(*kmsg.DescribeClusterResponse)
		fmt.Fprintf(&b, "\n%s: error %d, controller %d, nodes", a, resp.ErrorCode, resp.ControllerID)
		for _, n := range resp.Brokers {
			fmt.Fprintf(&b, " %d@%s:%d", n.NodeID, n.Host, n.Port)
		}
	}
	return b.String()
}

// LeaderWatch asks a fixed set of controller addresses with DescribeQuorum,
// over and over, which of them leads, and keeps the times at which none
// did: the stretches in which brokers had no active controller to talk to.
type LeaderWatch struct {
	addrs []string
	stop  chan struct{}
	done  sync.WaitGroup

	mu      sync.Mutex
	samples []leaderSample
}

type leaderSample struct {
	at     time.Time
	leader int32 // -1: nobody answered as leader
}

// leaderWatchPace is the pause between two rounds of the watch.
const leaderWatchPace = 50 * time.Millisecond

// WatchLeader starts a LeaderWatch over addrs, stopped when the test ends.
func WatchLeader(t testing.TB, addrs []string) *LeaderWatch {
	w := &LeaderWatch{addrs: addrs, stop: make(chan struct{})}
	w.done.Add(1)
	go w.run()
	t.Cleanup(w.Stop)
	return w
}

func (w *LeaderWatch) run() {
	defer w.done.Done()
	for {
		leader := int32(-1)
		if s, err := leaderAmong(w.addrs, nil); err == nil {
			leader = s.LeaderID
		}
		w.mu.Lock()
		w.samples = append(w.samples, leaderSample{time.Now(), leader})
		w.mu.Unlock()
		select {
		case <-w.stop:
			return
		case <-time.After(leaderWatchPace):
		}
	}
}

// Stop ends the watch; it is safe to call more than once.
func (w *LeaderWatch) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.done.Wait()
}

// LongestLeaderless is the longest stretch, within from..to, from a round
// that found a leader (or from) to the next one that found one (or to),
// across rounds that found none: how long the controllers had no leader
// answering, to within one round.
func (w *LeaderWatch) LongestLeaderless(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	lastLed, leaderless := from, false
	for _, s := range w.samples {
		switch {
		case s.at.Before(from) || s.at.After(to):
		case s.leader >= 0:
			if leaderless {
				longest = max(longest, s.at.Sub(lastLed))
			}
			lastLed, leaderless = s.at, false
		default:
			leaderless = true
		}
	}
	if leaderless {
		longest = max(longest, to.Sub(lastLed))
	}
	return longest
}

// Leaders lists the distinct leaders the watch saw from from to to, in order.
func (w *LeaderWatch) Leaders(from, to time.Time) []int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int32
	for _, s := range w.samples {
		if s.leader >= 0 && !s.at.Before(from) && !s.at.After(to) && (len(out) == 0 || out[len(out)-1] != s.leader) {
			out = append(out, s.leader)
		}
	}
	return out
}
