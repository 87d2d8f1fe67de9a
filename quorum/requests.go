// requests.go owns the node's own requests in flight: their ReqIDs, the
// one-request-per-(peer, key) rule, per-peer retry backoff, request
// timeouts, and which request is the fetch of the moment.

package quorum

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type peerKey struct {
	peer int32
	key  int16
}

// outRequest is what the node remembers of a request it sent, to match the
// answer against the role and epoch it was asked in.
type outRequest struct {
	to      int32
	key     int16
	epoch   int32
	role    Role
	preVote bool
	sentAt  int64
}

// requestTracker tracks the node's requests in flight. It knows nothing of
// roles: the node tells it what to add, forget and back off.
type requestTracker struct {
	inflight  map[uint64]outRequest
	toPeer    map[peerKey]uint64 // at most one request per (peer, key)
	retryAt   map[int32]int64    // no new request to the peer before this time
	fetching  uint64             // the Fetch or FetchSnapshot in flight, 0 if none
	nextReqID uint64
}

func newRequestTracker() requestTracker {
	return requestTracker{inflight: map[uint64]outRequest{}, toPeer: map[peerKey]uint64{}, retryAt: map[int32]int64{}}
}

// add records a new request and returns its ReqID.
func (t *requestTracker) add(out outRequest) uint64 {
	t.nextReqID++
	id := t.nextReqID
	t.inflight[id] = out
	t.toPeer[peerKey{out.to, out.key}] = id
	return id
}

// take removes and returns the request an answer (or failure) refers to;
// false for a duplicate or a request that already timed out.
func (t *requestTracker) take(id uint64) (outRequest, bool) {
	out, ok := t.inflight[id]
	if ok {
		t.forget(id, out)
	}
	return out, ok
}

func (t *requestTracker) forget(id uint64, out outRequest) {
	delete(t.inflight, id)
	if t.toPeer[peerKey{out.to, out.key}] == id {
		delete(t.toPeer, peerKey{out.to, out.key})
	}
	if t.fetching == id {
		t.fetching = 0
	}
}

// canSend reports whether a new request of key may go to peer at now.
func (t *requestTracker) canSend(peer int32, key int16, now int64) bool {
	_, busy := t.toPeer[peerKey{peer, key}]
	return !busy && now >= t.retryAt[peer]
}

// backoff holds every new request to peer until the time until.
func (t *requestTracker) backoff(peer int32, until int64) { t.retryAt[peer] = until }

// leaveRole stops the requests of a role that ended from blocking the next
// role's: Vote, Fetch and FetchSnapshot may go out again at once, and no
// peer stays backed off for an answer the old role got (Apache resets every
// connection on a transition), so a follower's first Fetch to its new
// leader never waits behind a NOT_LEADER its bootstrap fetch drew from that
// same node. Late answers are still matched by ReqID and dropped by role
// and epoch.
func (t *requestTracker) leaveRole() {
	for k := range t.toPeer {
		if k.key == keyVote || k.key == keyFetch || k.key == keyFetchSnapshot {
			delete(t.toPeer, k)
		}
	}
	clear(t.retryAt)
	t.fetching = 0
}

// takeExpired removes the requests sent timeoutMs or more before now and
// returns them in ReqID order, so that output stays deterministic.
func (t *requestTracker) takeExpired(now, timeoutMs int64) []outRequest {
	var expired []uint64
	for id, out := range t.inflight {
		if now-out.sentAt >= timeoutMs {
			expired = append(expired, id)
		}
	}
	slices.Sort(expired)
	outs := make([]outRequest, 0, len(expired))
	for _, id := range expired {
		out := t.inflight[id]
		t.forget(id, out)
		outs = append(outs, out)
	}
	return outs
}

// send queues req to peer and tracks it under a new ReqID.
func (n *Node) send(to int32, req kmsg.Request, preVote bool) uint64 {
	id := n.reqs.add(outRequest{to: to, key: req.Key(), epoch: n.epoch, role: n.role, preVote: preVote, sentAt: n.now})
	n.msgs = append(n.msgs, Message{From: n.id, To: to, ReqID: id, Request: req, Endpoint: n.peerEndpoint(to)})
	return id
}

// canSend reports whether a new request of key may go to peer now.
func (n *Node) canSend(peer int32, key int16) bool { return n.reqs.canSend(peer, key, n.now) }

// backoff holds new requests to peer for RetryBackoffMs.
func (n *Node) backoff(peer int32) { n.reqs.backoff(peer, n.now+n.cfg.RetryBackoffMs) }

// expireRequests times out requests older than RequestTimeoutMs.
func (n *Node) expireRequests() {
	for _, out := range n.reqs.takeExpired(n.now, n.cfg.RequestTimeoutMs) {
		n.handleFailure(out, ErrTimeout)
	}
}

// handleFailure reacts to a request that failed or timed out: the peer is
// backed off, except when a follower's fetch lost its connection to the
// leader and should try a new one at once (noteLeaderGone).
func (n *Node) handleFailure(out outRequest, err error) {
	if out.key == keyUpdateVoter || out.key == keyAddVoter || out.key == keyRemoveVoter {
		// A leader that does not serve UpdateRaftVoter (an older
		// kraftd), or is slow to add a voter, must not hold up the
		// fetches behind it; the next period asks again.
		return
	}
	if out.key == keyApiVersions && n.lead != nil && n.sentInThisState(out) {
		if c := n.lead.change; c != nil && c.apiVersions != 0 && c.voter.ID == out.to {
			n.finishVoterChange(errRequestTimedOut, fmt.Sprintf("voter %d did not answer ApiVersions: %v", out.to, err))
		}
	}
	if errors.Is(err, ErrPeerGone) && n.noteLeaderGone(out) {
		return
	}
	n.backoff(out.to)
}
