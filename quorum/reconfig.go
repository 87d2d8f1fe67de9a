// reconfig.go owns voter changes on the leader (KIP-853): AddRaftVoter,
// RemoveRaftVoter and UpdateRaftVoter, with Apache's rules (its
// AddVoterHandler, RemoveVoterHandler and UpdateVoterHandler). A change is
// a VotersRecord the leader appends; the voter set takes it as appended
// (voters.go), so the new set's majority commits it. One change may be
// uncommitted at a time.

package quorum

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// caughtUpWindowMs is how recently a new voter must have fetched, caught
// up, for AddRaftVoter to take it: Apache's LeaderState.isReplicaCaughtUp
// allows an hour.
const caughtUpWindowMs = 60 * 60 * 1000

// voterChange is the one add or remove a leader has in flight, from the
// request until its VotersRecord commits.
type voterChange struct {
	in    Message // the request, answered once
	key   int16   // keyAddVoter or keyRemoveVoter
	voter Voter   // the voter added or removed
	// apiVersions is the ReqID of the ApiVersions an add sends the new
	// voter, 0 once answered.
	apiVersions uint64
	offset      int64 // the VotersRecord's offset, -1 until appended
	ackOnCommit bool
	answered    bool
	deadline    int64
}

func voterChangeError(code int16, format string, args ...any) (int16, string) {
	return code, fmt.Sprintf(format, args...)
}

// defaultListener is the listener peers reach this node on (the first of
// its controller listeners), the one a new voter must give an endpoint on.
func (n *Node) defaultListener() string {
	if len(n.cfg.Endpoints) == 0 {
		return ""
	}
	return n.cfg.Endpoints[0].Name
}

// endpointOn is the endpoint of eps on listener, or the first one when
// listener is "" (no listeners configured).
func endpointOn(eps []Endpoint, listener string) (Endpoint, bool) {
	for _, e := range eps {
		if listener == "" || e.Name == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// canChangeVoters applies the checks every voter change shares, in
// Apache's order: no change in flight, the epoch's high watermark known,
// kraft.version 1, and the newest VotersRecord committed.
func (n *Node) canChangeVoters() (int16, string) {
	n.expireVoterChange()
	if n.lead.change != nil || n.lead.resignRequested {
		return voterChangeError(errRequestTimedOut, "the leader is still handling the previous voter change")
	}
	hw := n.lead.progress.hw
	if hw < 0 {
		return voterChangeError(errRequestTimedOut, "the leader has not committed its epoch yet")
	}
	if kv := n.control.kraftVersion(); kv < 1 {
		return voterChangeError(errUnsupportedVersion, "the quorum's kraft.version is %d; voter changes need 1", kv)
	}
	if offset, ok := n.control.lastOffset(); !ok || offset >= hw {
		return voterChangeError(errRequestTimedOut, "the latest voter change (offset %d) is not committed yet (high watermark %d)", offset, hw)
	}
	return errNone, ""
}

// handleAddVoter starts an AddRaftVoter that passed the common checks: the
// new voter's kraft.version range is asked with ApiVersions, on the
// endpoint it gives, and the answer comes back through Step.
func (n *Node) handleAddVoter(m Message, req *kmsg.AddRaftVoterRequest) {
	if code, msg := n.canChangeVoters(); code != errNone {
		n.respond(m, addVoterResponse(req.Version, code, msg))
		return
	}
	if _, ok := n.voterSet.Get(req.VoterID); ok {
		n.respond(m, addVoterResponse(req.Version, errDuplicateVoter, fmt.Sprintf("voter %d is already in the voter set", req.VoterID)))
		return
	}
	v := Voter{ID: req.VoterID, DirectoryID: req.VoterDirectoryID}
	for _, l := range req.Listeners {
		v.Endpoints = append(v.Endpoints, Endpoint{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	ep, _ := endpointOn(v.Endpoints, n.defaultListener())
	api := kmsg.NewPtrApiVersionsRequest()
	// v4 lists features whose minimum is 0, kraft.version among them.
	api.Version, api.ClientSoftwareName, api.ClientSoftwareVersion = 4, "kraftd", "1"
	id := n.reqs.add(outRequest{to: v.ID, key: keyApiVersions, epoch: n.epoch, role: n.role, sentAt: n.now})
	n.msgs = append(n.msgs, Message{From: n.id, To: v.ID, ReqID: id, Request: api, Endpoint: &ep})
	n.lead.change = &voterChange{in: m, key: keyAddVoter, voter: v, apiVersions: id, offset: -1,
		ackOnCommit: req.Version < 1 || req.AckWhenCommitted, deadline: n.now + n.cfg.RequestTimeoutMs}
}

// takeApiVersions is the leader's step for the new voter's ApiVersions
// answer: the voter must support the finalized kraft.version and have
// caught up; then the VotersRecord naming it is appended.
func (n *Node) takeApiVersions(reqID uint64, resp *kmsg.ApiVersionsResponse) {
	c := n.lead.change
	if c == nil || c.apiVersions != reqID {
		return
	}
	c.apiVersions = 0
	if resp.ErrorCode != errNone {
		n.finishVoterChange(errRequestTimedOut, fmt.Sprintf("ApiVersions to voter %d failed with error %d", c.voter.ID, resp.ErrorCode))
		return
	}
	kv := n.control.kraftVersion()
	supported := false
	for _, f := range resp.SupportedFeatures {
		if f.Name == "kraft.version" && f.MinVersion <= kv && kv <= f.MaxVersion {
			c.voter.MinKRaft, c.voter.MaxKRaft, supported = f.MinVersion, f.MaxVersion, true
		}
	}
	if !supported {
		n.finishVoterChange(errInvalidRequest, fmt.Sprintf("voter %d does not support kraft.version %d", c.voter.ID, kv))
		return
	}
	if !n.lead.progress.caughtUp(c.voter.ID, c.voter.DirectoryID, n.now) {
		n.finishVoterChange(errRequestTimedOut, fmt.Sprintf("voter %d has not caught up with the leader", c.voter.ID))
		return
	}
	c.offset = n.appendVoters(n.voterSet.with(c.voter))
	if !c.ackOnCommit {
		n.answerVoterChange(errNone, "")
	}
}

// handleRemoveVoter takes a RemoveRaftVoter that passed the common checks:
// its VotersRecord is appended at once, and the answer waits for the commit.
func (n *Node) handleRemoveVoter(m Message, req *kmsg.RemoveRaftVoterRequest) {
	if code, msg := n.canChangeVoters(); code != errNone {
		n.respond(m, removeVoterResponse(req.Version, code, msg))
		return
	}
	v, ok := n.voterSet.Get(req.VoterID)
	if !ok || v.DirectoryID != req.VoterDirectoryID || len(n.voterSet) == 1 {
		n.respond(m, removeVoterResponse(req.Version, errVoterNotFound,
			fmt.Sprintf("cannot remove voter %d (directory %x) from voters %v", req.VoterID, req.VoterDirectoryID, n.voters)))
		return
	}
	n.lead.change = &voterChange{in: m, key: keyRemoveVoter, voter: v, ackOnCommit: true,
		offset: n.appendVoters(n.voterSet.without(v.ID)), deadline: n.now + n.cfg.RequestTimeoutMs}
}

// appendVoters appends a VotersRecord of set and returns its offset; the
// voter set takes it at once.
func (n *Node) appendVoters(set VoterSet) int64 {
	offset := n.endOffset
	n.appendBatches(votersBatch(offset, n.epoch, n.now, set))
	return offset
}

// voterChangeCommitted answers the change whose VotersRecord the high
// watermark passed, and has a leader the committed set leaves out resign
// (it led until then, as Apache's does: KAFKA-17608). The resignation does
// not hang on the request: one that timed out before its record committed
// would otherwise leave a leader that is no voter leading on, taking
// further changes.
func (n *Node) voterChangeCommitted() {
	hw := n.lead.progress.hw
	if c := n.lead.change; c != nil && c.offset >= 0 && hw > c.offset {
		n.finishVoterChange(errNone, "")
	}
	if offset, ok := n.control.lastOffset(); !n.isVoter && ok && hw > offset {
		n.lead.resignRequested = true
	}
}

// expireVoterChange ends a change that outlived its request timeout.
func (n *Node) expireVoterChange() {
	if c := n.lead.change; c != nil && n.now >= c.deadline {
		n.finishVoterChange(errRequestTimedOut, "the voter change did not complete in time")
	}
}

// answerVoterChange answers the change's request, once.
func (n *Node) answerVoterChange(code int16, msg string) {
	c := n.lead.change
	if c.answered {
		return
	}
	c.answered = true
	v := c.in.Request.GetVersion()
	if c.key == keyAddVoter {
		n.respond(c.in, addVoterResponse(v, code, msg))
	} else {
		n.respond(c.in, removeVoterResponse(v, code, msg))
	}
}

// finishVoterChange answers the change (if not yet) and clears it, so the
// next one may start.
func (n *Node) finishVoterChange(code int16, msg string) {
	if n.lead.change == nil {
		return
	}
	n.answerVoterChange(code, msg)
	n.lead.change = nil
}

// handleUpdateVoter takes an UpdateRaftVoter that passed the common
// checks: a voter's new listeners and kraft.version range. At
// kraft.version 1 they are written in a VotersRecord, answered at once (as
// Apache 4.1 does); at 0 the leader keeps them in memory.
func (n *Node) handleUpdateVoter(m Message, req *kmsg.UpdateRaftVoterRequest) {
	answer := func(code int16) { n.respond(m, n.updateVoterResponse(req.Version, code)) }
	n.expireVoterChange()
	if n.lead.change != nil || n.lead.progress.hw < 0 {
		answer(errRequestTimedOut)
		return
	}
	kv := n.control.kraftVersion()
	set := n.voterSet
	if kv < 1 {
		if n.lead.volatileVoters != nil {
			set = n.lead.volatileVoters
		}
	} else if offset, ok := n.control.lastOffset(); !ok || offset >= n.lead.progress.hw {
		answer(errRequestTimedOut)
		return
	}
	f := req.KRaftVersionFeature
	updated := Voter{ID: req.VoterID, DirectoryID: req.VoterDirectoryID, MinKRaft: f.MinSupportedVersion, MaxKRaft: f.MaxSupportedVersion}
	for _, l := range req.Listeners {
		updated.Endpoints = append(updated.Endpoints, Endpoint{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	_, hasDefault := endpointOn(updated.Endpoints, n.defaultListener())
	if f.MinSupportedVersion > kv || f.MaxSupportedVersion < kv || !hasDefault {
		answer(errInvalidRequest)
		return
	}
	old, ok := set.Get(req.VoterID)
	// At kraft.version 0 the set has no directory ids to match.
	if !ok || (kv >= 1 && !old.matches(updated.ID, updated.DirectoryID)) {
		answer(errVoterNotFound)
		return
	}
	if kv >= 1 {
		n.appendVoters(set.with(updated))
	} else {
		n.lead.volatileVoters = set.with(updated)
	}
	answer(errNone)
}

// failVoterChange answers a change the leader will not finish: it stops
// leading.
func (n *Node) failVoterChange() {
	if n.lead != nil && n.lead.change != nil {
		n.finishVoterChange(errNotLeaderOrFollower, "the leader changed")
	}
}

// checkVoterKey applies the checks every voter change starts with
// (Apache's KafkaRaftClient handlers): the cluster id, leadership in epoch,
// and a voter key with a directory id.
func (n *Node) checkVoterKey(clusterID *string, epoch, voterID int32, dir [16]byte) (int16, string) {
	if !n.clusterIDOK(clusterID) {
		return voterChangeError(errInconsistentClusterID, "cluster id %q is not %q", *clusterID, n.cfg.ClusterID)
	}
	if code := n.validateLeaderOnly(epoch); code != errNone {
		return code, ""
	}
	if voterID < 0 || dir == [16]byte{} {
		return voterChangeError(errInvalidRequest, "the request names no valid voter (id %d, directory %x)", voterID, dir)
	}
	return errNone, ""
}

// checkAddVoter is checkVoterKey for an AddRaftVoter (Apache's
// KafkaRaftClient.handleAddVoterRequest), which must also give an
// endpoint on the default listener.
func (n *Node) checkAddVoter(req *kmsg.AddRaftVoterRequest) (int16, string) {
	if code, msg := n.checkVoterKey(req.ClusterID, n.epoch, req.VoterID, req.VoterDirectoryID); code != errNone {
		return code, msg
	}
	var eps []Endpoint
	for _, l := range req.Listeners {
		eps = append(eps, Endpoint{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	if _, ok := endpointOn(eps, n.defaultListener()); !ok {
		return voterChangeError(errInvalidRequest, "the request gives no endpoint for the listener %q", n.defaultListener())
	}
	return errNone, ""
}

// checkRemoveVoter is checkVoterKey for a RemoveRaftVoter.
func (n *Node) checkRemoveVoter(req *kmsg.RemoveRaftVoterRequest) (int16, string) {
	return n.checkVoterKey(req.ClusterID, n.epoch, req.VoterID, req.VoterDirectoryID)
}

// checkUpdateVoter is checkVoterKey for an UpdateRaftVoter, which names
// the leader epoch it was sent in. A node that does not lead answers with
// the leader it knows (updateVoterResponse).
func (n *Node) checkUpdateVoter(req *kmsg.UpdateRaftVoterRequest) int16 {
	code, _ := n.checkVoterKey(req.ClusterID, req.CurrentLeaderEpoch, req.VoterID, req.VoterDirectoryID)
	return code
}

// updateVoterPeriod is how often a follower considers sending its leader
// UpdateRaftVoter: one fetch timeout, as Apache's FollowerState in every
// release from 4.1 to 4.4 (trunk doubles it, and has the leader check the
// new endpoint with ApiVersions first).
func (n *Node) updateVoterPeriod() int64 { return n.cfg.FetchTimeoutMs }

// maybeSendUpdateVoter tells the leader this voter's listeners and
// kraft.version range when the leader needs them, as an Apache follower
// does: at kraft.version 1 when the voter set names this node otherwise
// than it is; at 0 once to every new leader, which keeps them in memory
// (they are what a kraft.version upgrade writes).
func (n *Node) maybeSendUpdateVoter() {
	if n.now < n.updateVoterAt || n.leaderID < 0 {
		return
	}
	local := n.localVoter()
	need := !n.leaderUpdated
	if n.control.kraftVersion() >= 1 {
		named, ok := n.voterSet.Get(n.id)
		need = ok && named.matches(local.ID, local.DirectoryID) && !named.equal(local)
	}
	if need {
		if !n.canSend(n.leaderID, keyUpdateVoter) {
			return
		}
		n.send(n.leaderID, n.buildUpdateVoterRequest(local), false)
	}
	n.updateVoterAt = n.now + n.updateVoterPeriod()
}

func (n *Node) buildUpdateVoterRequest(local Voter) *kmsg.UpdateRaftVoterRequest {
	req := kmsg.NewPtrUpdateRaftVoterRequest()
	req.ClusterID = n.clusterIDPtr()
	req.CurrentLeaderEpoch = n.epoch
	req.VoterID, req.VoterDirectoryID = local.ID, local.DirectoryID
	for _, e := range local.Endpoints {
		req.Listeners = append(req.Listeners, kmsg.UpdateRaftVoterRequestListener{Name: e.Name, Host: e.Host, Port: e.Port})
	}
	req.KRaftVersionFeature.MinSupportedVersion, req.KRaftVersionFeature.MaxSupportedVersion = local.MinKRaft, local.MaxKRaft
	return req
}
