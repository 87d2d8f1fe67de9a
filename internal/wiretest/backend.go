package wiretest

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/quorum"
)

// Backend is the state of a server with no quorum behind it: a fixed
// cluster id and feature levels, node 1 the active and only registered
// controller, no controller to call and no SCRAM user. It has every method
// of server.Backend but Raft, whose argument is the server's request type:
// a test type embeds *Backend and answers Raft with Answer.
type Backend struct {
	// Release, until closed, holds every Fetch unanswered, standing in for
	// a fetch parked at the leader.
	Release chan struct{}
}

// NewBackend is a Backend whose fetches wait.
func NewBackend() *Backend { return &Backend{Release: make(chan struct{})} }

// Answer is Raft's answer to a request with key and body: the empty
// response, DescribeQuorum's saying NOT_LEADER_OR_FOLLOWER; a Fetch first
// waits until Release is closed or ctx is done.
func (b *Backend) Answer(ctx context.Context, key int16, body kmsg.Request) (kmsg.Response, error) {
	if key == 1 {
		select {
		case <-b.Release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp := body.ResponseKind()
	if dq, ok := resp.(*kmsg.DescribeQuorumResponse); ok {
		dq.ErrorCode = kerr.NotLeaderForPartition.Code
	}
	return resp, nil
}

func (b *Backend) ClusterID() string { return "q1Sh-9_ISia_zwGINzRvyQ" }

func (b *Backend) Features() (map[string]int16, int64) {
	return map[string]int16{"metadata.version": 27, "kraft.version": 1}, 5
}

func (b *Backend) ActiveController() int32 { return 1 }

func (b *Backend) Controllers(string) []kmsg.DescribeClusterResponseBroker {
	return []kmsg.DescribeClusterResponseBroker{{NodeID: 1, Host: "127.0.0.1", Port: 9093}}
}

// Controller is nil: the controller's APIs answer NOT_CONTROLLER.
func (b *Backend) Controller() *controller.Controller { return nil }
func (b *Backend) Status() quorum.Status              { return quorum.Status{} }
func (b *Backend) CaughtUp() <-chan struct{}          { return nil }

// ScramCredential knows no user.
func (b *Backend) ScramCredential(string, int8) (metadata.UserScramCredentialRecord, bool) {
	return metadata.UserScramCredentialRecord{}, false
}
