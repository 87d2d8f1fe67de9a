package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/internal/wiretest"
)

// AddRaftVoter v0-1, RemoveRaftVoter v0 and UpdateRaftVoter v0 are
// advertised with Apache's ranges ([trunk] for AddRaftVoter v1), and each
// reaches the quorum (the backend's Raft) and is answered at its version.
func TestRaftVoterKeysAdvertisedAndServed(t *testing.T) {
	_, addr, _ := startServer(t)
	c := wiretest.Dial(t, addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(4)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "kraftd-test", "1.0"
	c.Send(av, 1)
	_, resp := c.Recv(av)
	want := map[int16][2]int16{80: {0, 1}, 81: {0, 0}, 82: {0, 0}}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		if w, ok := want[k.ApiKey]; ok {
			if k.MinVersion != w[0] || k.MaxVersion != w[1] {
				t.Errorf("key %d advertised %d-%d, want %d-%d", k.ApiKey, k.MinVersion, k.MaxVersion, w[0], w[1])
			}
			delete(want, k.ApiKey)
		}
	}
	if len(want) != 0 {
		t.Fatalf("keys not advertised: %v", want)
	}
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.SetVersion(1)
	remove := kmsg.NewPtrRemoveRaftVoterRequest()
	update := kmsg.NewPtrUpdateRaftVoterRequest()
	for i, req := range []kmsg.Request{add, remove, update} {
		c.Send(req, int32(10+i))
		corr, resp := c.Recv(req)
		if corr != int32(10+i) || resp.Key() != req.Key() || resp.GetVersion() != req.GetVersion() {
			t.Fatalf("%s: corr %d, answered with key %d v%d", kmsg.NameForKey(req.Key()), corr, resp.Key(), resp.GetVersion())
		}
	}
}
