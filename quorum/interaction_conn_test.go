package quorum_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/quorum"
)

// Connection failures in transcripts. The env remembers each request a node
// was handed and has not answered yet (a Fetch parked at the leader, say):
// those are the requests whose connection a dying process takes with it.

// connState is the env's view of the connections between nodes.
type connState struct {
	// open holds, by receiver, the requests delivered and not yet answered.
	open map[int32][]quorum.Message
	// refusing are down nodes whose host refuses new connections: requests
	// to them fail with quorum.ErrPeerGone instead of being dropped.
	refusing map[int32]bool
	// refuseNext counts, by directed link, the next connections the
	// receiver's host refuses although the receiver is up.
	refuseNext map[[2]int32]int
}

// delivered notes a request handed to its receiver.
func (c *connState) delivered(m quorum.Message) {
	if m.Request != nil {
		c.open[m.To] = append(c.open[m.To], m)
	}
}

// answered forgets the request a response from node answers.
func (c *connState) answered(node int32, m quorum.Message) {
	if m.Response == nil {
		return
	}
	c.open[node] = slices.DeleteFunc(c.open[node], func(o quorum.Message) bool {
		return o.From == m.To && o.ReqID == m.ReqID
	})
}

// fail queues, for every open request to node from one of froms (any
// sender when froms is empty), the failure its sender's peer client
// reports when the connection closes under it.
func (e *interactionEnv) failOpen(node int32, froms []int32) {
	keep := e.conns.open[node][:0]
	for _, o := range e.conns.open[node] {
		if len(froms) > 0 && !slices.Contains(froms, o.From) {
			keep = append(keep, o)
			continue
		}
		e.queue = append(e.queue, quorum.Message{From: node, To: o.From, ReqID: o.ReqID, Err: quorum.ErrPeerGone})
	}
	e.conns.open[node] = keep
}

// crashNode crashes a node. With `close`, it is a process dying on a live
// host: the kernel closes its connections, so the requests it held fail,
// and new connections to it are refused until it restarts. Without, the
// machine vanished: its peers hear nothing. With close=(2 3), only those
// peers see it close, and are refused; the others hear nothing.
// Example: crash 1 close
func (e *interactionEnv) crashNode(_ *testing.T, c testCmd) {
	n := e.node(c)
	n.Crash()
	if c.has("close") {
		e.conns.refusing[n.ID()] = true
		e.failOpen(n.ID(), nil)
	}
	if peers := parseIDs(c.arg("close", "")); len(peers) > 0 {
		// Only these peers hear of it; the others' requests are lost.
		e.failOpen(n.ID(), peers)
		for _, p := range peers {
			e.conns.refuseNext[[2]int32{p, n.ID()}] = 1 << 20
		}
	}
	delete(e.conns.open, n.ID())
}

// dropConn closes the connections from the named senders to a live node,
// as a middlebox or a peer-side limit might: the requests in flight on them
// fail with quorum.ErrPeerGone; the next request connects again, unless
// refuse=N says the next N connections on the link are refused too.
// Example: drop-conn 2->1 refuse=1
func (e *interactionEnv) dropConn(_ *testing.T, c testCmd) {
	from, to, _ := strings.Cut(c.args[0], "->")
	f, t := parseIDs(from)[0], parseIDs(to)[0]
	e.failOpen(t, []int32{f})
	if n, _ := strconv.Atoi(c.arg("refuse", "0")); n > 0 {
		e.conns.refuseNext[[2]int32{f, t}] = n
	}
}

// refused reports whether a request is refused (and queues the failure its
// sender sees): to a down node whose host refuses, or on a link told to.
func (e *interactionEnv) refused(m quorum.Message) bool {
	link := [2]int32{m.From, m.To}
	switch {
	case m.Request == nil:
		return false
	case e.conns.refuseNext[link] > 0:
		e.conns.refuseNext[link]--
	case !e.conns.refusing[m.To] || e.nodes[m.To].Up():
		return false
	}
	e.queue = append(e.queue, quorum.Message{From: m.To, To: m.From, ReqID: m.ReqID, Err: quorum.ErrPeerGone})
	return true
}
