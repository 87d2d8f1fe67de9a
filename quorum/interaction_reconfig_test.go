package quorum_test

import (
	"errors"
	"fmt"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/node/nodetest"
	"github.com/kraftd/kraftd/quorum"
)

// Voter changes in transcripts: AddRaftVoter, RemoveRaftVoter and
// UpdateRaftVoter handed to a node as an admin client (or a voter) would
// send them, their answers printed when the node gives them.

// endpointOf is the controller listener of transcript node id.
func endpointOf(id int32) quorum.Endpoint {
	return quorum.Endpoint{Name: "CONTROLLER", Host: "localhost", Port: uint16(9090 + id)}
}

// adminAnswer prints a voter change's answer when node at gives it.
func (e *interactionEnv) adminAnswer(at int32) func(kmsg.Response) {
	return func(resp kmsg.Response) {
		switch r := resp.(type) {
		case *kmsg.AddRaftVoterResponse:
			e.printf("n%d answers AddRaftVoter err=%d%s\n", at, r.ErrorCode, errorMessage(r.ErrorMessage))
		case *kmsg.RemoveRaftVoterResponse:
			e.printf("n%d answers RemoveRaftVoter err=%d%s\n", at, r.ErrorCode, errorMessage(r.ErrorMessage))
		case *kmsg.UpdateRaftVoterResponse:
			l := r.CurrentLeader
			e.printf("n%d answers UpdateRaftVoter err=%d leader=%d epoch=%d at %s:%d\n", at, r.ErrorCode, l.LeaderID, l.LeaderEpoch, l.Host, l.Port)
		}
	}
}

func errorMessage(m *string) string {
	if m == nil {
		return ""
	}
	return fmt.Sprintf(" (%s)", *m)
}

// voterKey is the id and directory id of the command's voter argument:
// `dir=zero` names no directory, `dir=other` another directory of the id,
// `dir=N` the one it has after its N-th reformat.
func voterKey(c testCmd) (int32, [16]byte) {
	id, _ := strconv.Atoi(c.args[1])
	dir := nodetest.DirectoryID(int32(id))
	switch d := c.arg("dir", ""); d {
	case "":
	case "zero":
		dir = [16]byte{}
	case "other":
		dir[1] = 0xff
	default:
		formats, _ := strconv.Atoi(d)
		dir = nodetest.ReformattedDirectoryID(int32(id), formats)
	}
	return int32(id), dir
}

// reformat replaces a node's disk with a freshly formatted one under a new
// directory id and starts it: the same node id, another replica.
// Example: reformat 3
func (e *interactionEnv) reformat(t *testing.T, c testCmd) {
	n := e.node(c)
	delete(e.conns.refusing, n.ID())
	if err := n.Reformat(); err != nil {
		t.Fatal(err)
	}
	e.nodes[n.ID()] = e.track(n.Node)
	e.printStatus()
}

// addVoter sends AddRaftVoter for a voter to a node, then stabilizes.
// Example: add-voter 1 4 [no-ack] [version=0] [dir=zero]
func (e *interactionEnv) addVoter(t *testing.T, c testCmd) {
	at := parseIDs(c.args[0])[0]
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.Version = int16(num(c, "version", 1))
	cluster := c.arg("cluster", clusterID)
	req.ClusterID = &cluster
	req.VoterID, req.VoterDirectoryID = voterKey(c)
	req.AckWhenCommitted = !c.has("no-ack")
	ep := endpointOf(req.VoterID)
	req.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: c.arg("listener", ep.Name), Host: ep.Host, Port: ep.Port}}
	e.nodes[at].Inbound(req, e.adminAnswer(at))
	e.stabilize(t)
}

// removeVoter sends RemoveRaftVoter for a voter to a node, then stabilizes.
// Example: remove-voter 1 3 [dir=other]
func (e *interactionEnv) removeVoter(t *testing.T, c testCmd) {
	at := parseIDs(c.args[0])[0]
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	cluster := c.arg("cluster", clusterID)
	req.ClusterID = &cluster
	req.VoterID, req.VoterDirectoryID = voterKey(c)
	e.nodes[at].Inbound(req, e.adminAnswer(at))
	e.stabilize(t)
}

// updateVoter sends UpdateRaftVoter, as voter id would send it about
// itself to its leader, with a new port, then stabilizes.
// Example: update-voter 1 2 port=9999 epoch=1 [max-kraft=0]
func (e *interactionEnv) updateVoter(t *testing.T, c testCmd) {
	at := parseIDs(c.args[0])[0]
	req := kmsg.NewPtrUpdateRaftVoterRequest()
	cluster := c.arg("cluster", clusterID)
	req.ClusterID = &cluster
	req.VoterID, req.VoterDirectoryID = voterKey(c)
	req.CurrentLeaderEpoch = int32(num(c, "epoch", 1))
	ep := endpointOf(req.VoterID)
	req.Listeners = []kmsg.UpdateRaftVoterRequestListener{{Name: ep.Name, Host: ep.Host, Port: uint16(num(c, "port", int64(ep.Port)))}}
	req.KRaftVersionFeature.MinSupportedVersion = 0
	req.KRaftVersionFeature.MaxSupportedVersion = int16(num(c, "max-kraft", 1))
	e.nodes[at].Inbound(req, e.adminAnswer(at))
	e.stabilize(t)
}

// printVoters prints each named node's voter set and kraft.version, and
// whether the node counts itself a voter.
// Example: voters 1 2 4
func (e *interactionEnv) printVoters(_ *testing.T, c testCmd) {
	for _, id := range parseIDs(strings.Join(c.args, ",")) {
		n := e.nodes[id]
		if !n.Up() {
			e.printf("n%d down\n", id)
			continue
		}
		st := n.Status()
		var parts []string
		for _, v := range st.Voters {
			dir := "dir"
			if v.DirectoryID == ([16]byte{}) {
				dir = "nodir"
			}
			parts = append(parts, fmt.Sprintf("%d(%s,:%d,kraft=%d-%d)", v.ID, dir, v.Endpoints[0].Port, v.MinKRaft, v.MaxKRaft))
		}
		// A static quorum upgraded to kraft.version 1 follows its log's set.
		ignored := ""
		if st.IgnoredStaticVoters {
			ignored = " ignored-static-voters"
		}
		e.printf("n%d kraft.version=%d voter=%t voters=%s%s\n", id, st.KRaftVersion, st.IsVoter, strings.Join(parts, " "), ignored)
	}
}

// upgradeKRaft asks a node to upgrade kraft.version, as the controller
// does for kafka-features upgrade: a NoOp record proposed behind the
// upgrade. It prints the refusal, or where the NoOp went and, once it
// commits, that the upgrade did.
// Example: upgrade-kraft 1 [version=1] [validate-only] [epoch=N]
func (e *interactionEnv) upgradeKRaft(_ *testing.T, c testCmd) {
	n := e.node(c)
	u := &node.KRaftUpgrade{Version: int16(num(c, "version", 1)), ValidateOnly: c.has("validate-only")}
	base, answered := int64(-1), false
	p := &node.Proposal{
		Records:      []metadata.Record{&metadata.NoOpRecord{}},
		Epoch:        int32(num(c, "epoch", 0)),
		KRaftUpgrade: u,
		Stamp:        func(first int64) { base = first },
		Done: func(first int64, err error) {
			answered = true
			var refused *quorum.KRaftUpgradeError
			switch {
			case errors.As(err, &refused):
				e.printf("n%d refuses the upgrade err=%d (%s)\n", n.ID(), refused.Code, refused.Message)
			case err != nil:
				e.printf("n%d: %v\n", n.ID(), err)
			case first < 0:
				e.printf("n%d would upgrade\n", n.ID())
			default:
				e.printf("n%d upgrade committed (NoOp at %d)\n", n.ID(), first)
			}
		},
	}
	n.Runtime().Propose(p)
	if !answered && base >= 0 {
		e.printf("NoOp base=%d\n", base)
	}
	e.process()
}
