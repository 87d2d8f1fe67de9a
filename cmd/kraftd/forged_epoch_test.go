package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/internal/loopback"
	"github.com/kraftd/kraftd/internal/nemesis"
	"github.com/kraftd/kraftd/internal/supervisor"
	"github.com/kraftd/kraftd/quorum"
)

// Issue 34, defect 1, on real processes: forged Vote, BeginQuorumEpoch,
// EndQuorumEpoch and Fetch requests at epochs near 2^31-1, sent over a
// socket with no credentials to the leader and a follower of a three-node
// kraftd quorum, leave it with a leader, in an epoch a few past the one it
// had, before and after every node restarts. At 84121cc one Vote at
// 2^31-2 from node 99 left the quorum without a leader for good.
func TestForgedEpochsOnRealQuorum(t *testing.T) {
	bin := kraftdBinary(t)
	q := startStaticQuorum(t, bin, 3, nil)
	leader, e0 := q.waitLeader(t, -1)
	t.Logf("node %d leads epoch %d", leader, e0)
	for _, epoch := range []int32{math.MaxInt32, math.MaxInt32 - 1, math.MaxInt32 - 2, math.MaxInt32 - 100, e0 + 3, e0 + 1} {
		follower := int32(1 + leader%3)
		for _, to := range []int32{leader, follower} {
			for _, req := range []kmsg.Request{
				forgeVote(q.clusterID, epoch, 99), forgeVote(q.clusterID, epoch, 1+to%3),
				forgeBegin(q.clusterID, epoch, 99), forgeEnd(q.clusterID, epoch, leader), forgeFetch(q.clusterID, epoch, 99),
			} {
				if _, err := roundTrip(q.addr(to), req); err != nil {
					t.Fatalf("%T at epoch %d to node %d: %v", req, epoch, to, err)
				}
			}
		}
	}
	_, e1 := q.waitLeader(t, e0)
	if e1 > e0+10 {
		t.Fatalf("after the forged requests the quorum leads epoch %d, from %d", e1, e0)
	}
	for id := int32(1); id <= 3; id++ {
		q.stop(t, id)
	}
	for id := int32(1); id <= 3; id++ {
		q.start(t, id)
	}
	if _, e2 := q.waitLeader(t, e0); e2 > e0+12 {
		t.Fatalf("after a restart the quorum leads epoch %d, from %d", e2, e0)
	}
}

// A single voter whose quorum-state holds 2^31-1 (written by a kraftd that
// took it from a forged request) refuses to start, saying why and what to
// do, instead of running without ever electing itself. At 84121cc it ran
// on silently.
func TestStartRefusesLastEpoch(t *testing.T) {
	bin := kraftdBinary(t)
	conf, meta := staticVoter(t, bin, "")
	file := filepath.Join(meta, "__cluster_metadata-0", "quorum-state")
	written := func() bool { _, err := os.Stat(file); return err == nil }
	startAndStop(t, bin, written, "--config", conf)
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	forged := regexp.MustCompile(`"leaderEpoch":\s*\d+`).ReplaceAll(body, []byte(`"leaderEpoch":2147483647`))
	if string(forged) == string(body) {
		t.Fatalf("no leaderEpoch in %s", body)
	}
	if err := os.WriteFile(file, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "start", "--config", conf).CombinedOutput()
	if ctx.Err() != nil || err == nil || !strings.Contains(string(out), "2147483647") || !strings.Contains(string(out), "move that file aside") {
		t.Fatalf("start from quorum-state at epoch 2147483647: %v (timed out: %v)\n%s", err, ctx.Err() != nil, out)
	}
	// Moved aside, the node starts from its log's epoch and leads again.
	if err := os.Rename(file, file+".forged"); err != nil {
		t.Fatal(err)
	}
	startAndStop(t, bin, nil, "--config", conf)
}

// staticQuorum is a static voter set of kraftd processes on loopback.
type staticQuorum struct {
	bin, clusterID string
	ports          []int
	confs          []string
	procs          []*exec.Cmd
	logs           []string
	cgroups        []string // each node's, when a nemesis.Net can cut it
}

// startStaticQuorum formats and starts n voters, each in a cgroup of cut
// (nil: none); extra, if given, adds node i's own properties lines.
func startStaticQuorum(t *testing.T, bin string, n int, cut *nemesis.Net, extra ...func(id int32) string) *staticQuorum {
	t.Helper()
	ports, err := loopback.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	q := &staticQuorum{bin: bin, clusterID: "q1Sh-9_ISia_zwGINzRvyQ", ports: ports, procs: make([]*exec.Cmd, n)}
	var voters []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	for i, p := range ports {
		dir := t.TempDir()
		conf := filepath.Join(dir, "server.properties")
		body := fmt.Sprintf("process.roles=controller\nnode.id=%d\ncontroller.listener.names=CONTROLLER\n"+
			"listeners=CONTROLLER://127.0.0.1:%d\nmetadata.log.dir=%s\ncontroller.quorum.voters=%s\n",
			i+1, p, filepath.Join(dir, "meta"), strings.Join(voters, ","))
		for _, e := range extra {
			body += e(int32(i + 1))
		}
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, bin, "format", "--config", conf, "--cluster-id", q.clusterID)
		q.confs = append(q.confs, conf)
		q.logs = append(q.logs, filepath.Join(dir, "kraftd.log"))
		if cut != nil {
			q.cgroups = append(q.cgroups, cut.Node(int32(i+1), p))
		}
	}
	t.Cleanup(func() {
		for id := range q.procs {
			if c := q.procs[id]; c != nil {
				_ = c.Process.Kill() // by PID, the process this test started
				_ = c.Wait()
			}
		}
		if t.Failed() {
			for _, l := range q.logs {
				out, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, tail(string(out), 4000))
			}
		}
	})
	for id := int32(1); id <= int32(n); id++ {
		q.start(t, id)
	}
	return q
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (q *staticQuorum) addr(id int32) string { return fmt.Sprintf("127.0.0.1:%d", q.ports[id-1]) }

func (q *staticQuorum) start(t *testing.T, id int32) {
	t.Helper()
	out, err := os.OpenFile(q.logs[id-1], os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(q.bin, "start", "--config", q.confs[id-1])
	cmd.Stdout, cmd.Stderr = out, out
	cg := ""
	if q.cgroups != nil {
		cg = q.cgroups[id-1]
	}
	if err := supervisor.StartCmdIn(cmd, cg); err != nil {
		t.Fatal(err)
	}
	q.procs[id-1] = cmd
}

// stop ends node id with SIGTERM, as an operator's restart does.
func (q *staticQuorum) stop(t *testing.T, id int32) {
	t.Helper()
	c := q.procs[id-1]
	_ = c.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = c.Process.Kill()
		<-done
		t.Fatalf("node %d did not stop within 2 minutes of SIGTERM", id)
	}
	q.procs[id-1] = nil
}

// waitLeader polls DescribeQuorum until a node answers as leader of an
// epoch past after, for up to three minutes, and returns it.
func (q *staticQuorum) waitLeader(t *testing.T, after int32) (int32, int32) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		for id := int32(1); id <= int32(len(q.ports)); id++ {
			req := kmsg.NewPtrDescribeQuorumRequest()
			req.Version = 2
			p := kmsg.NewDescribeQuorumRequestTopicPartition()
			req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{p}}}
			resp, err := roundTrip(q.addr(id), req)
			if err != nil {
				continue
			}
			r := resp.(*kmsg.DescribeQuorumResponse)
			if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
				continue
			}
			if pp := r.Topics[0].Partitions[0]; pp.ErrorCode == 0 && pp.LeaderID == id && pp.LeaderEpoch > after {
				return id, pp.LeaderEpoch
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no leader past epoch %d within 3 minutes", after)
	return 0, 0
}

// roundTrip sends req on a new connection, with no credentials, and reads
// its answer.
func roundTrip(addr string, req kmsg.Request) (kmsg.Response, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("forger")).AppendRequest(nil, req, 1)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return nil, fmt.Errorf("answer of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, err
	}
	body = body[4:] // the correlation id
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		body = body[1:] // no tagged fields in the header
	}
	return resp, resp.ReadFrom(body)
}

func forgeVote(cluster string, epoch, candidate int32) *kmsg.VoteRequest {
	r := kmsg.NewPtrVoteRequest()
	r.Version, r.ClusterID, r.VoterID = 2, &cluster, -1
	p := kmsg.NewVoteRequestTopicPartition()
	p.CandidateID, p.CandidateEpoch = candidate, epoch
	p.LastOffset, p.LastOffsetEpoch = 1<<40, epoch-1 // a log longer than any voter's
	r.Topics = []kmsg.VoteRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.VoteRequestTopicPartition{p}}}
	return r
}

func forgeBegin(cluster string, epoch, leader int32) *kmsg.BeginQuorumEpochRequest {
	r := kmsg.NewPtrBeginQuorumEpochRequest()
	r.Version, r.ClusterID, r.VoterID = 1, &cluster, -1
	p := kmsg.NewBeginQuorumEpochRequestTopicPartition()
	p.LeaderID, p.LeaderEpoch = leader, epoch
	r.Topics = []kmsg.BeginQuorumEpochRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.BeginQuorumEpochRequestTopicPartition{p}}}
	return r
}

func forgeEnd(cluster string, epoch, leader int32) *kmsg.EndQuorumEpochRequest {
	r := kmsg.NewPtrEndQuorumEpochRequest()
	r.Version, r.ClusterID = 1, &cluster
	p := kmsg.NewEndQuorumEpochRequestTopicPartition()
	p.LeaderID, p.LeaderEpoch = leader, epoch
	r.Topics = []kmsg.EndQuorumEpochRequestTopic{{Topic: quorum.MetadataTopic, Partitions: []kmsg.EndQuorumEpochRequestTopicPartition{p}}}
	return r
}

func forgeFetch(cluster string, epoch, replica int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.ClusterID, r.ReplicaID, r.ReplicaState.ID = 17, &cluster, replica, replica
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = epoch, 0, 0
	r.Topics = []kmsg.FetchRequestTopic{{Topic: quorum.MetadataTopic, TopicID: quorum.MetadataTopicID, Partitions: []kmsg.FetchRequestTopicPartition{p}}}
	return r
}
