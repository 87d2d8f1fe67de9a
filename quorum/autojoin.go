// autojoin.go owns controller.quorum.auto.join.enable (Apache 4.2+, its
// KafkaRaftClient.pollFollowerAsObserver): an observer of a dynamic quorum
// that follows a leader asks it, once per update period (one fetch
// timeout, the timer a voter sends UpdateRaftVoter on), to add it as a
// voter: AddRaftVoter with its directory id and listeners, not waiting
// for the commit. If the voter set names its id with another directory (a
// voter formatted anew), it first asks to remove that stale entry with
// RemoveRaftVoter; the next period then adds it. It stops once the voter
// set names it, and a leader that answers "added", "busy"
// (REQUEST_TIMED_OUT), DUPLICATE_VOTER or VOTER_NOT_FOUND is asked again
// only a whole period after that answer.

package quorum

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maybeAutoJoin sends the observer's next auto-join request, if it is due.
func (n *Node) maybeAutoJoin() {
	if !n.cfg.AutoJoin || n.control.kraftVersion() < 1 || n.leaderID < 0 || n.leaderID == n.id || n.now < n.updateVoterAt {
		return
	}
	var req kmsg.Request
	if stale, ok := n.voterSet.Get(n.id); ok {
		// The set names this id, not this directory (else the node would
		// be a voter): that entry goes first.
		r := kmsg.NewPtrRemoveRaftVoterRequest()
		r.ClusterID = n.clusterIDPtr()
		r.VoterID, r.VoterDirectoryID = stale.ID, stale.DirectoryID
		req = r
	} else {
		req = n.buildAutoJoinAddRequest()
	}
	if !n.canSend(n.leaderID, req.Key()) {
		return
	}
	n.send(n.leaderID, req, false)
	n.updateVoterAt = n.now + n.updateVoterPeriod()
}

// buildAutoJoinAddRequest is the AddRaftVoter an auto-joining observer
// sends: this replica and its listeners, answered without waiting for the
// commit (v1), as Apache's is.
func (n *Node) buildAutoJoinAddRequest() *kmsg.AddRaftVoterRequest {
	local := n.localVoter()
	r := kmsg.NewPtrAddRaftVoterRequest()
	r.Version = n.version(n.leaderID, keyAddVoter)
	r.ClusterID = n.clusterIDPtr()
	r.TimeoutMillis = int32(n.cfg.RequestTimeoutMs)
	r.VoterID, r.VoterDirectoryID = local.ID, local.DirectoryID
	r.AckWhenCommitted = false
	for _, e := range local.Endpoints {
		r.Listeners = append(r.Listeners, kmsg.AddRaftVoterRequestListener{Name: e.Name, Host: e.Host, Port: e.Port})
	}
	return r
}

// autoJoinAnswered takes the leader's answer to an auto-join request:
// success, a busy leader, or done already (settled, DUPLICATE_VOTER for an
// add, VOTER_NOT_FOUND for a remove) wait a whole period from now; any
// other error leaves the period as it was.
func (n *Node) autoJoinAnswered(from int32, code, settled int16) {
	if from != n.leaderID {
		return
	}
	if code == errNone || code == errRequestTimedOut || code == settled {
		n.updateVoterAt = n.now + n.updateVoterPeriod()
	}
}
