package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadyTimeout bounds how long the harness waits for a process to answer or a
// quorum to elect a leader. It is a guard against hanging, not a performance
// assertion: JVMs start slowly on a loaded 2-core machine (a broker took
// over two minutes to start at a load average of 45).
const ReadyTimeout = 5 * time.Minute

// PollInterval is the pause between two readiness probes.
const PollInterval = 100 * time.Millisecond

// Eventually calls probe until it returns nil, failing the test with the last
// error after timeout. If proc is not nil and its process exits, it fails at
// once (no point waiting for a dead process).
func Eventually(t testing.TB, timeout time.Duration, what string, proc *Process, probe func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := probe()
		if err == nil {
			return
		}
		if proc != nil {
			if exited, werr := proc.Exited(); exited {
				failNow(t, "%s: %s exited (%v) while waiting; last probe error: %v", what, proc.Name, werr, err)
			}
		}
		if time.Now().After(deadline) {
			failNow(t, "%s: not done after %v: %v", what, timeout, err)
		}
		time.Sleep(PollInterval)
	}
}

// APIVersions sends ApiVersions v3 (what Apache clients send first).
func APIVersions(addr string) (*kmsg.ApiVersionsResponse, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName = "kraftd-compat"
	req.ClientSoftwareVersion = "0"
	r, err := Request(addr, req)
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		return resp, errorf("ApiVersions from %s: error code %d", addr, resp.ErrorCode)
	}
	return resp, nil
}

// WaitAPIVersions polls ApiVersions on addr until it answers without error.
// proc, if not nil, is the process expected to serve addr.
func WaitAPIVersions(t testing.TB, addr string, proc *Process) *kmsg.ApiVersionsResponse {
	t.Helper()
	var resp *kmsg.ApiVersionsResponse
	Eventually(t, ReadyTimeout, "ApiVersions from "+addr, proc, func() (err error) {
		resp, err = APIVersions(addr)
		return err
	})
	return resp
}

// QuorumStatus is the part of a DescribeQuorum answer the tests look at.
type QuorumStatus struct {
	Addr          string // who answered
	LeaderID      int32
	LeaderEpoch   int32
	HighWatermark int64
	Voters        []int32
	Observers     []int32
	Resp          *kmsg.DescribeQuorumResponse // the whole answer
}

// DescribeQuorum sends DescribeQuorum v2 for __cluster_metadata-0 to addr.
// Apache controllers answer it only when they lead; others answer with an
// error code, returned here as an error.
func DescribeQuorum(addr string) (*QuorumStatus, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(2)
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = "__cluster_metadata"
	topic.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, topic)
	r, err := Request(addr, req)
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != 0 {
		return nil, errorf("DescribeQuorum from %s: error code %d", addr, resp.ErrorCode)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, errorf("DescribeQuorum from %s: %d topics, want 1 with 1 partition", addr, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return nil, errorf("DescribeQuorum from %s: partition error code %d", addr, p.ErrorCode)
	}
	s := &QuorumStatus{Addr: addr, LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark, Resp: resp}
	for _, v := range p.CurrentVoters {
		s.Voters = append(s.Voters, v.ReplicaID)
	}
	for _, o := range p.Observers {
		s.Observers = append(s.Observers, o.ReplicaID)
	}
	return s, nil
}

// WaitLeader asks every address in turn with DescribeQuorum until one answers
// as leader (LeaderID >= 0) and accept, if not nil, agrees. It fails the test
// after ReadyTimeout.
func WaitLeader(t testing.TB, addrs []string, accept func(*QuorumStatus) error) *QuorumStatus {
	t.Helper()
	var got *QuorumStatus
	Eventually(t, ReadyTimeout, fmt.Sprintf("a quorum leader among %v", addrs), nil, func() (err error) {
		got, err = leaderAmong(addrs, accept)
		return err
	})
	return got
}

// leaderAmong asks each address once with DescribeQuorum and returns the
// first answer that names a leader and that accept, if not nil, agrees
// with; otherwise the last reason none did.
func leaderAmong(addrs []string, accept func(*QuorumStatus) error) (*QuorumStatus, error) {
	var last error
	for _, a := range addrs {
		s, err := DescribeQuorum(a)
		if err == nil && s.LeaderID < 0 {
			err = errorf("DescribeQuorum from %s: no leader yet", a)
		}
		if err == nil && accept != nil {
			err = accept(s)
		}
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}
