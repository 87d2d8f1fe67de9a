package compat

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// forVersions runs f as a parallel subtest per Apache Kafka version. The
// tests reserve JVM slots (ReserveJVMs), which keeps the machine from being
// swamped when versions and tests run side by side.
func forVersions(t *testing.T, f func(t *testing.T, version string)) {
	for _, v := range Versions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			KafkaCache(t, v)
			f(t, v)
		})
	}
}

// forSampledVersions is forVersions for the tests make test runs against
// one Apache version only, sample, to stay within its time budget (each
// such test runs a cluster per version, and the versions run one after the
// other within JVMBudget); make matrix (build tag matrix) runs them
// against every version.
func forSampledVersions(t *testing.T, sample string, f func(t *testing.T, version string)) {
	if matrixBuild {
		forVersions(t, f)
		return
	}
	t.Run(sample, func(t *testing.T) {
		KafkaCache(t, sample)
		f(t, sample)
	})
}

// An Apache controller formatted with --standalone leads a quorum of itself;
// Apache's kafka-metadata-quorum and our own DescribeQuorum v2 both say so.
func TestApacheStandalone(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 2)
		at := stamp(t)
		n := NewApacheController(t, ApacheOptions{Version: v, NodeID: 1})
		clusterID := NewUUID()
		out := n.Format(t, clusterID, "--standalone")
		if !strings.Contains(out, "Formatting") {
			t.Errorf("format printed %q, want a Formatting line", out)
		}
		at("formatted")
		n.Start(t)
		n.WaitReady(t)
		at("ApiVersions answered")

		s := WaitLeader(t, []string{n.Addr()}, nil)
		at("leader elected")
		if s.LeaderID != 1 || !slices.Equal(s.Voters, []int32{1}) {
			t.Errorf("DescribeQuorum: leader %d voters %v, want leader 1 voters [1]", s.LeaderID, s.Voters)
		}
		if s.LeaderEpoch < 1 {
			t.Errorf("DescribeQuorum: leader epoch %d, want >= 1", s.LeaderEpoch)
		}
		// v2 carries each voter's endpoints in Nodes.
		var endpoints []string
		for _, node := range s.Resp.Nodes {
			for _, l := range node.Listeners {
				endpoints = append(endpoints, fmt.Sprintf("%d:%s://%s:%d", node.NodeID, l.Name, l.Host, l.Port))
			}
		}
		want := fmt.Sprintf("1:CONTROLLER://127.0.0.1:%d", n.Port)
		if !slices.Contains(endpoints, want) {
			t.Errorf("DescribeQuorum v2 nodes %v, want %s", endpoints, want)
		}

		status, err := MetadataQuorum(t, v, "--bootstrap-controller", n.Addr(), "describe", "--status")
		if err != nil {
			t.Fatal(err)
		}
		at("kafka-metadata-quorum ran")
		t.Logf("kafka-metadata-quorum describe --status:\n%s", status)
		got := statusLines(status)
		if got["ClusterId"] != clusterID {
			t.Errorf("ClusterId %q, want %q", got["ClusterId"], clusterID)
		}
		if got["LeaderId"] != "1" {
			t.Errorf("LeaderId %q, want 1", got["LeaderId"])
		}
		if !strings.Contains(got["CurrentVoters"], `"id": 1`) ||
			!strings.Contains(got["CurrentVoters"], fmt.Sprintf("CONTROLLER://127.0.0.1:%d", n.Port)) {
			t.Errorf("CurrentVoters %q, want node 1 on CONTROLLER://127.0.0.1:%d", got["CurrentVoters"], n.Port)
		}

		features, err := Features(t, v, "--bootstrap-controller", n.Addr(), "describe")
		if err != nil {
			t.Fatal(err)
		}
		at("kafka-features ran")
		t.Logf("kafka-features describe:\n%s", features)
		// --standalone formats with kraft.version 1 (a dynamic quorum).
		if !strings.Contains(features, "Feature: metadata.version") ||
			!regexp.MustCompile(`Feature: kraft.version\s+SupportedMinVersion: \d+\s+SupportedMaxVersion: \d+\s+FinalizedVersionLevel: 1\b`).MatchString(features) {
			t.Errorf("kafka-features describe lacks metadata.version or kraft.version at level 1")
		}
	})
}

// Three Apache controllers with static controller.quorum.voters elect a
// leader; after SIGKILL of the leader the other two elect a new one, and the
// killed node, restarted, catches up as a follower.
func TestApacheStaticQuorumFailover(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 3)
		at := stamp(t)
		nodes, _ := NewApacheStaticQuorum(t, v, 3)
		addrs := Addrs(nodes...)
		at("formatted")
		StartApache(t, nodes...)
		// A known high watermark means a majority has replicated the log.
		first := WaitLeader(t, addrs, func(s *QuorumStatus) error {
			if s.HighWatermark <= 0 {
				return fmt.Errorf("leader %d: high watermark %d not known yet", s.LeaderID, s.HighWatermark)
			}
			return nil
		})
		at(fmt.Sprintf("first leader %d epoch %d hw %d", first.LeaderID, first.LeaderEpoch, first.HighWatermark))
		if !slices.Equal(first.Voters, []int32{1, 2, 3}) {
			t.Errorf("voters %v, want [1 2 3]", first.Voters)
		}

		old := nodes[first.LeaderID-1]
		old.Proc.Kill()
		second := WaitLeader(t, Addrs(without(nodes, old)...), func(s *QuorumStatus) error {
			if s.LeaderID == first.LeaderID || s.LeaderEpoch <= first.LeaderEpoch {
				return fmt.Errorf("leader %d epoch %d: not a new leader yet", s.LeaderID, s.LeaderEpoch)
			}
			if s.HighWatermark <= first.HighWatermark {
				return fmt.Errorf("new leader %d: high watermark %d not past %d yet", s.LeaderID, s.HighWatermark, first.HighWatermark)
			}
			return nil
		})
		at(fmt.Sprintf("second leader %d epoch %d hw %d", second.LeaderID, second.LeaderEpoch, second.HighWatermark))

		old.Start(t)
		leaderAddr := nodes[second.LeaderID-1].Addr()
		Eventually(t, ReadyTimeout, "restarted node catches up", old.Proc, func() error {
			s, err := DescribeQuorum(leaderAddr)
			if err != nil {
				return err
			}
			for _, r := range s.Resp.Topics[0].Partitions[0].CurrentVoters {
				if r.ReplicaID == first.LeaderID {
					if r.LogEndOffset < second.HighWatermark {
						return fmt.Errorf("node %d at offset %d, want >= %d", r.ReplicaID, r.LogEndOffset, second.HighWatermark)
					}
					return nil
				}
			}
			return fmt.Errorf("node %d not among voters %v", first.LeaderID, s.Voters)
		})
		at("restarted node caught up")
	})
}

// The harness's own frames: a flexible request carries header v2 and its
// response header v1 is skipped; ApiVersions keeps response header v0.
func TestRequestFrames(t *testing.T) {
	t.Parallel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(2)
	frame := AppendRequest(nil, req, 7, "c")
	// size(4) key(2) version(2) corr(4) clientid(2+1) tags(1) body...
	if got := frame[4:17]; string(got) != "\x00\x37\x00\x02\x00\x00\x00\x07\x00\x01c\x00\x01" {
		t.Fatalf("header bytes % x", got)
	}
	resp := req.ResponseKind()
	resp.SetVersion(2)
	body := resp.AppendTo(nil)
	in := append([]byte{0, 0, 0, 7, 1, 5, 1, 0xff}, body...) // corr, 1 tag: tag 5 size 1
	if _, err := ParseResponse(req, 7, in); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if _, err := ParseResponse(req, 8, in); err == nil {
		t.Fatal("parse accepted a wrong correlation id")
	}

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	if f := AppendRequest(nil, av, 1, ""); f[len(f)-len(av.AppendTo(nil))-1] != 0 {
		t.Fatal("ApiVersions v3 request header v2 lacks its tag byte")
	}
	avr := av.ResponseKind()
	avr.SetVersion(3)
	in = append([]byte{0, 0, 0, 1}, avr.AppendTo(nil)...) // no header tags
	if _, err := ParseResponse(av, 1, in); err != nil {
		t.Fatalf("ApiVersions parse: %v", err)
	}
}

func stamp(t *testing.T) func(string) {
	start := time.Now()
	return func(what string) { t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond)) }
}
