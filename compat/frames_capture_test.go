package compat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
)

// framesDir holds the frames captured between Apache controllers, one
// directory per version; TestApacheFrames replays them without a JVM.
const framesDir = "testdata/frames"

// capturedKeys are the API keys whose frames are saved: the KRaft quorum
// protocol plus ApiVersions (which every raft connection starts with) and
// DescribeQuorum (sent by the test). FetchSnapshot is saved only if a
// follower happened to need a snapshot.
var capturedKeys = append(slices.Clone(requiredKeys), kmsg.FetchSnapshot.Int16())

// requiredKeys must all have been seen, or the capture is incomplete.
var requiredKeys = []int16{
	kmsg.ApiVersions.Int16(),
	kmsg.Fetch.Int16(),
	kmsg.Vote.Int16(),
	kmsg.BeginQuorumEpoch.Int16(),
	kmsg.EndQuorumEpoch.Int16(),
	kmsg.DescribeQuorum.Int16(),
}

// Three Apache controllers whose controller.quorum.voters point at
// FrameProxy ports elect a leader, run, and lose the leader to SIGTERM (so it
// sends EndQuorumEpoch); one exchange per quorum API key is written to
// testdata/frames/<version>/. It runs only with -capture:
//
//	go test ./compat -run TestCaptureApacheFrames -capture -count=1
func TestCaptureApacheFrames(t *testing.T) {
	t.Parallel()
	if !*captureFlag {
		t.Skip("captures testdata/frames only with -capture")
	}
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 3)
		at := stamp(t)
		const count = 3
		ports := FreePorts(t, count)
		proxies := make([]*FrameProxy, count)
		voters := make([]string, count)
		for i, port := range ports {
			proxies[i] = StartFrameProxy(t, Addr(port))
			voters[i] = fmt.Sprintf("%d@%s", i+1, proxies[i].Addr())
		}
		clusterID := NewUUID()
		nodes := make([]*ApacheNode, count)
		for i, port := range ports {
			nodes[i] = NewApacheController(t, ApacheOptions{Version: v, NodeID: i + 1, Port: port, Voters: strings.Join(voters, ",")})
			nodes[i].Format(t, clusterID)
		}
		at("formatted")
		StartApache(t, nodes...)
		// Probing the real listeners keeps the harness's own DescribeQuorum
		// probes (mostly errors from followers) out of the capture.
		first := WaitLeader(t, Addrs(nodes...), func(s *QuorumStatus) error {
			if s.HighWatermark <= 0 {
				return fmt.Errorf("leader %d: high watermark not known yet", s.LeaderID)
			}
			return nil
		})
		at(fmt.Sprintf("leader %d epoch %d", first.LeaderID, first.LeaderEpoch))
		time.Sleep(3 * time.Second) // a few rounds of Fetch from both followers

		// A DescribeQuorum answered by the leader, through the proxies. On a
		// loaded machine leadership may have moved since WaitLeader, so every
		// proxy is asked until one answers as leader (followers' error
		// answers are recorded too, but the saving below prefers successes).
		var cur *QuorumStatus
		Eventually(t, ReadyTimeout, "DescribeQuorum through a proxy", nil, func() error {
			var last error
			for _, p := range proxies {
				s, err := DescribeQuorum(p.Addr())
				if err == nil && s.LeaderID >= 0 {
					cur = s
					return nil
				}
				if err == nil {
					err = fmt.Errorf("DescribeQuorum from %s: no leader yet", p.Addr())
				}
				last = err
			}
			return last
		})
		at(fmt.Sprintf("DescribeQuorum: leader %d epoch %d", cur.LeaderID, cur.LeaderEpoch))

		// SIGTERM: a resigning leader sends EndQuorumEpoch to the voters.
		leader := nodes[cur.LeaderID-1]
		leader.Proc.Stop()
		at("leader stopped")
		second := WaitLeader(t, Addrs(without(nodes, leader)...), func(s *QuorumStatus) error {
			if s.LeaderEpoch <= cur.LeaderEpoch {
				return fmt.Errorf("leader %d epoch %d: not a new leader yet", s.LeaderID, s.LeaderEpoch)
			}
			return nil
		})
		at(fmt.Sprintf("new leader %d epoch %d", second.LeaderID, second.LeaderEpoch))
		time.Sleep(2 * time.Second) // the new leader's BeginQuorumEpoch and Fetch rounds

		seen := map[int16]int{}
		all := map[int16][]Exchange{}
		for _, p := range proxies {
			for k, n := range p.Seen() {
				seen[k] += n
				all[k] = append(all[k], p.Exchanges(k)...)
			}
		}
		var summary []string
		for k, n := range seen {
			summary = append(summary, fmt.Sprintf("%d %s: %d", k, kmsg.NameForKey(k), n))
		}
		slices.Sort(summary)
		t.Logf("exchanges through the proxies: %s", strings.Join(summary, ", "))
		for _, k := range requiredKeys {
			if seen[k] == 0 {
				t.Errorf("no %s (key %d) exchange went through the proxies", kmsg.NameForKey(k), k)
			}
		}
		if t.Failed() {
			return
		}

		dir := filepath.Join(framesDir, v)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// A recapture replaces the version's frames; stale files of another
		// API version would otherwise linger beside the new ones.
		old, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range capturedKeys {
			xs := all[k]
			if len(xs) == 0 {
				continue
			}
			// Golden bytes of the normal path matter most, so exchanges that
			// succeeded come first (the smallest of several is often an
			// error: a Fetch to a node that no longer leads, a stale
			// EndQuorumEpoch). Among those the smallest keeps the files small;
			// for Fetch that is one without records, whose bytes kmsg treats
			// as opaque anyway.
			var ok []Exchange
			for _, x := range xs {
				if err := exchangeOK(x); err == nil {
					ok = append(ok, x)
				}
			}
			if len(ok) == 0 {
				t.Logf("no %s exchange succeeded; saving one that failed (%v)", kmsg.NameForKey(k), exchangeOK(xs[0]))
				ok = xs
			}
			x := slices.MinFunc(ok, func(a, b Exchange) int {
				return (len(a.Request) + len(a.Response)) - (len(b.Request) + len(b.Response))
			})
			base := filepath.Join(dir, fmt.Sprintf("%d-%s-v%d", k, kmsg.NameForKey(k), x.Version))
			writeFile(t, base+"-request.bin", x.Request)
			writeFile(t, base+"-response.bin", x.Response)
			t.Logf("saved %s-{request,response}.bin (%d + %d bytes)", base, len(x.Request), len(x.Response))
		}
	})
}

// exchangeOK decodes an exchange as kraftd would and returns an error if the
// response carries a non-zero error code anywhere or denies a vote. It walks
// the response's JSON form so one function covers every API's nesting.
func exchangeOK(x Exchange) error {
	h, body, err := protocol.ParseRequestHeader(x.Request)
	if err != nil {
		return err
	}
	req := kmsg.RequestForKey(h.Key)
	req.SetVersion(h.Version)
	if err := req.ReadFrom(body); err != nil {
		return err
	}
	_, resp, err := protocol.ParseResponse(x.Response, req)
	if err != nil {
		return err
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return walkErrors(v)
}

func walkErrors(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, f := range v {
			if k == "ErrorCode" && f != float64(0) {
				return fmt.Errorf("error code %v", f)
			}
			if k == "VoteGranted" && f == false {
				return fmt.Errorf("vote not granted")
			}
			if err := walkErrors(f); err != nil {
				return err
			}
		}
	case []any:
		for _, f := range v {
			if err := walkErrors(f); err != nil {
				return err
			}
		}
	}
	return nil
}
