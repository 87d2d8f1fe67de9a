package peer

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/server"
)

// The peer client's tests talk to kraftd's own server, over loopback, with
// a backend that answers every raft request at once from no state.
type answerAll struct{}

func (answerAll) Raft(_ context.Context, r *server.Request) (kmsg.Response, error) {
	resp := r.Body.ResponseKind()
	if dq, ok := resp.(*kmsg.DescribeQuorumResponse); ok {
		dq.ErrorCode = kerr.NotLeaderForPartition.Code
	}
	return resp, nil
}
func (answerAll) ClusterID() string { return "q1Sh-9_ISia_zwGINzRvyQ" }
func (answerAll) Features() (map[string]int16, int64) {
	return map[string]int16{"metadata.version": 27}, 5
}
func (answerAll) ActiveController() int32                                 { return 1 }
func (answerAll) Controllers(string) []kmsg.DescribeClusterResponseBroker { return nil }
func (answerAll) Controller() *controller.Controller                      { return nil }
func (answerAll) Status() quorum.Status                                   { return quorum.Status{} }
func (answerAll) CaughtUp() <-chan struct{}                               { return nil }
func (answerAll) ScramCredential(string, int8) (metadata.UserScramCredentialRecord, bool) {
	return metadata.UserScramCredentialRecord{}, false
}

func startServer(t *testing.T) (*server.Server, string, answerAll) {
	t.Helper()
	return startServerAt(t, "127.0.0.1:0")
}

// startServerAt is startServer listening on addr (a restart on a known port).
func startServerAt(t *testing.T, addr string) (*server.Server, string, answerAll) {
	t.Helper()
	cfg, err := server.ParseConfig(map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://" + addr, "log.dirs": t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(cfg, answerAll{}, zerolog.New(zerolog.NewTestWriter(t)))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, s.Addr("CONTROLLER").String(), answerAll{}
}
