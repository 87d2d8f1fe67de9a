package peer

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/internal/wiretest"
	"github.com/kraftd/kraftd/server"
)

// The peer client's tests talk to kraftd's own server, over loopback, with
// a backend that answers every raft request at once from no state: its
// fetches are released from the start.
type answerAll struct{ *wiretest.Backend }

func (b answerAll) Raft(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	return b.Answer(ctx, r.Header.Key, r.Body)
}

func startServer(t *testing.T) (*server.Server, string) {
	t.Helper()
	return startServerAt(t, "127.0.0.1:0")
}

// startServerAt is startServer listening on addr (a restart on a known port).
func startServerAt(t *testing.T, addr string) (*server.Server, string) {
	t.Helper()
	cfg, err := server.ParseConfig(map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://" + addr, "log.dirs": t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := answerAll{wiretest.NewBackend()}
	close(b.Release)
	s := server.New(cfg, b, zerolog.New(zerolog.NewTestWriter(t)))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, s.Addr("CONTROLLER").String()
}
