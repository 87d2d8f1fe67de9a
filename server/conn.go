package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"runtime/debug"
	"sync"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
)

// maxInFlightPerConn bounds the requests one connection may have pipelined
// before the server stops reading from it, so one client cannot grow memory
// without bound.
const maxInFlightPerConn = 128

// Request is one decoded request as a handler sees it.
type Request struct {
	Header   protocol.RequestHeader
	Body     kmsg.Request
	Listener string
	Remote   net.Addr
	// Ctx is cancelled when the connection closes or the server stops, so a
	// waiting handler (a parked Fetch) can give up.
	Ctx context.Context
}

// pending is a response slot, queued in request order.
type pending struct {
	frame    []byte
	close    bool // close the connection instead of answering
	finished bool // set under responder.queueMu
}

// responder writes a connection's responses in request order. Whichever
// handler finishes the oldest outstanding request writes it, and every
// finished response queued behind it, itself: no writer goroutine has to
// wake up between a handler and the socket.
type responder struct {
	conn   net.Conn
	cancel context.CancelFunc
	slots  chan struct{} // one per request in flight

	writeMu sync.Mutex // held while popping and writing, so writes keep queue order
	w       *bufio.Writer
	queueMu sync.Mutex // never held while writing: the reader only needs this one
	queue   []*pending
	dead    bool
	pending sync.WaitGroup
}

// add queues p behind the requests already in flight, waiting while
// maxInFlightPerConn are; false once the connection is closing.
func (r *responder) add(ctx context.Context, p *pending) bool {
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	r.pending.Add(1)
	r.queueMu.Lock()
	r.queue = append(r.queue, p)
	r.queueMu.Unlock()
	return true
}

// finish marks p answered and writes what is ready at the head of the queue.
func (r *responder) finish(p *pending) {
	defer r.pending.Done()
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.queueMu.Lock()
	p.finished = true
	var ready []*pending
	for len(r.queue) > 0 && r.queue[0].finished {
		ready = append(ready, r.queue[0])
		r.queue = r.queue[1:]
	}
	dead := r.dead
	r.queueMu.Unlock()
	for range ready {
		<-r.slots
	}
	if dead || len(ready) == 0 {
		return
	}
	for _, q := range ready {
		if q.close {
			r.w.Flush()
			r.kill()
			return
		}
		if _, err := r.w.Write(q.frame); err != nil {
			r.kill()
			return
		}
	}
	if r.w.Flush() != nil {
		r.kill()
	}
}

// kill closes the connection; later responses are dropped.
func (r *responder) kill() {
	r.queueMu.Lock()
	r.dead = true
	r.queueMu.Unlock()
	r.cancel()
	r.conn.Close()
}

// serveConn runs one connection: the calling goroutine reads and dispatches
// each request to a goroutine of its own; responses leave in request order.
func (s *Server) serveConn(ctx context.Context, c net.Conn, listener string) {
	ctx, cancel := context.WithCancel(ctx)
	log := s.log.With().Str("remote", c.RemoteAddr().String()).Str("listener", listener).Logger()
	resp := &responder{conn: c, cancel: cancel, slots: make(chan struct{}, maxInFlightPerConn), w: bufio.NewWriterSize(c, 64*1024)}
	defer func() {
		// Answer what was asked before the client stopped sending (a
		// half-closed connection still reads), then close.
		resp.pending.Wait()
		cancel()
		c.Close()
	}()

	r := bufio.NewReaderSize(c, 64*1024)
	for {
		frame, err := protocol.ReadFrame(r, s.cfg.MaxFrameSize)
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				log.Warn().Err(err).Msg("closing connection: unreadable frame")
			}
			return
		}
		req, errResp, err := s.decode(frame)
		if err != nil {
			log.Warn().Err(err).Msg("closing connection: bad request")
			p := &pending{close: true}
			if resp.add(ctx, p) {
				resp.finish(p)
			}
			return
		}
		p := &pending{}
		if !resp.add(ctx, p) {
			return
		}
		if errResp != nil {
			p.frame = protocol.AppendResponse(nil, req.Header, errResp)
			resp.finish(p)
			continue
		}
		req.Listener, req.Remote, req.Ctx = listener, c.RemoteAddr(), ctx
		go s.handle(log, req, resp, p)
	}
}

// decode turns a frame into a request. It returns an immediate error
// response for an ApiVersions request at a version kraftd does not know (the
// client then retries at a version it offers), and an error, meaning "close
// the connection", for everything Apache also closes on: unknown keys, keys
// not served on this listener, unsupported versions, undecodable bodies.
func (s *Server) decode(frame []byte) (*Request, kmsg.Response, error) {
	h, body, err := protocol.ParseRequestHeader(frame)
	if err != nil {
		return nil, nil, err
	}
	req := &Request{Header: h}
	if !s.registry.Supports(h.Key, h.Version) {
		if h.Key == protocol.ApiVersionsKey {
			return req, s.unsupportedApiVersions(), nil
		}
		if _, served := s.registry.Lookup(h.Key); !served {
			return nil, nil, errors.New(kmsg.NameForKey(h.Key) + " is not served on a controller listener")
		}
		return nil, nil, errors.New(kmsg.NameForKey(h.Key) + " at an unsupported version")
	}
	req.Body = kmsg.RequestForKey(h.Key)
	req.Body.SetVersion(h.Version)
	if err := req.Body.ReadFrom(body); err != nil {
		return nil, nil, errors.New("undecodable " + kmsg.NameForKey(h.Key) + " body: " + err.Error())
	}
	return req, nil, nil
}

// unsupportedApiVersions is Apache's answer to ApiVersions at an unknown
// version: a v0 body with UNSUPPORTED_VERSION and the supported ranges.
func (s *Server) unsupportedApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = s.registry.ApiKeys()
	return resp
}

func (s *Server) handle(log zerolog.Logger, req *Request, resp *responder, p *pending) {
	defer resp.finish(p)
	defer func() {
		// A handler bug must cost one connection, never the process.
		if v := recover(); v != nil {
			log.Error().Interface("panic", v).Bytes("stack", debug.Stack()).Str("api", kmsg.NameForKey(req.Header.Key)).Msg("handler panicked; closing connection")
			p.close = true
		}
	}()
	h := handlers[req.Header.Key]
	out, err := h.fn(s, req)
	if err != nil {
		if req.Ctx.Err() == nil {
			log.Warn().Err(err).Str("api", kmsg.NameForKey(req.Header.Key)).Msg("closing connection")
		}
		p.close = true
		return
	}
	out.SetVersion(req.Header.Version)
	p.frame = protocol.AppendResponse(nil, req.Header, out)
}
