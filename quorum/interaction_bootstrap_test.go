package quorum_test

import "github.com/kraftd/kraftd/quorum"

// bootstrapRoutes is the transcripts' network for bootstrap servers: a
// request to quorum.BootstrapID(i) reaches the node listening on its
// Message.Endpoint, and the answer comes back from the bootstrap id, as a
// real peer client reports it.
type bootstrapRoutes struct {
	// hosts maps (requester, bootstrap id) to the node behind it.
	hosts map[[2]int32]int32
	// open maps (requester, ReqID) to the bootstrap id asked, until the
	// answer leaves.
	open map[[2]int64]int32
}

// host is the node behind peer as other addresses it.
func (b *bootstrapRoutes) host(peer, other int32) int32 {
	if h, ok := b.hosts[[2]int32{other, peer}]; ok {
		return h
	}
	return peer
}

// outbound takes a message as a node sent it: a request to a bootstrap
// server learns its host, an answer to one leaves under its bootstrap id.
func (b *bootstrapRoutes) outbound(m quorum.Message) quorum.Message {
	if b.hosts == nil {
		b.hosts, b.open = map[[2]int32]int32{}, map[[2]int64]int32{}
	}
	switch {
	case m.Request != nil && m.To <= quorum.BootstrapID(0) && m.Endpoint != nil:
		b.hosts[[2]int32{m.From, m.To}] = int32(m.Endpoint.Port) - 9090 // endpointOf's ports
	case m.Request == nil:
		if alias, ok := b.open[[2]int64{int64(m.To), int64(m.ReqID)}]; ok {
			delete(b.open, [2]int64{int64(m.To), int64(m.ReqID)})
			m.From = alias
		}
	}
	return m
}

// inbound is the request as its host receives it: from the requester, to
// the host itself, with the answer remembered to go back under the alias.
func (b *bootstrapRoutes) inbound(m quorum.Message) quorum.Message {
	if m.Request == nil || m.To > quorum.BootstrapID(0) {
		return m
	}
	b.open[[2]int64{int64(m.From), int64(m.ReqID)}] = m.To
	m.To = b.host(m.To, m.From)
	return m
}
