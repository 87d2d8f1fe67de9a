package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"runtime/debug"

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

// pending is a response slot. Slots are queued in request order; the writer
// waits on each in turn, which keeps responses in request order however the
// handlers interleave.
type pending struct {
	done  chan struct{}
	frame []byte
	close bool // close the connection instead of answering
}

// serveConn runs one connection: the calling goroutine reads and dispatches,
// a second goroutine writes responses in order.
func (s *Server) serveConn(ctx context.Context, c net.Conn, listener string) {
	ctx, cancel := context.WithCancel(ctx)
	log := s.log.With().Str("remote", c.RemoteAddr().String()).Str("listener", listener).Logger()
	queue := make(chan *pending, maxInFlightPerConn)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeResponses(c, queue, cancel)
	}()
	defer func() {
		close(queue)
		<-writerDone
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
			queue <- &pending{done: closedChan, close: true}
			return
		}
		p := &pending{done: make(chan struct{})}
		select {
		case queue <- p:
		case <-ctx.Done():
			return
		}
		if errResp != nil {
			p.frame = protocol.AppendResponse(nil, req.Header, errResp)
			close(p.done)
			continue
		}
		req.Listener, req.Remote, req.Ctx = listener, c.RemoteAddr(), ctx
		go s.handle(log, req, p)
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

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

func (s *Server) handle(log zerolog.Logger, req *Request, p *pending) {
	defer close(p.done)
	defer func() {
		// A handler bug must cost one connection, never the process.
		if v := recover(); v != nil {
			log.Error().Interface("panic", v).Bytes("stack", debug.Stack()).Str("api", kmsg.NameForKey(req.Header.Key)).Msg("handler panicked; closing connection")
			p.close = true
		}
	}()
	h := handlers[req.Header.Key]
	resp, err := h.fn(s, req)
	if err != nil {
		if req.Ctx.Err() == nil {
			log.Warn().Err(err).Str("api", kmsg.NameForKey(req.Header.Key)).Msg("closing connection")
		}
		p.close = true
		return
	}
	resp.SetVersion(req.Header.Version)
	p.frame = protocol.AppendResponse(nil, req.Header, resp)
}

func (s *Server) writeResponses(c net.Conn, queue <-chan *pending, cancel context.CancelFunc) {
	defer func() {
		cancel()
		c.Close()
		// Drain so the reader never blocks on a full queue after we stop.
		for range queue {
		}
	}()
	w := bufio.NewWriterSize(c, 64*1024)
	for p := range queue {
		select {
		case <-p.done:
		default:
			// Flush what is written before waiting on a slow handler.
			if w.Flush() != nil {
				return
			}
			<-p.done
		}
		if p.close {
			w.Flush()
			return
		}
		if _, err := w.Write(p.frame); err != nil {
			return
		}
		// Flush when nothing else is queued, so pipelined responses share writes.
		if len(queue) == 0 && w.Flush() != nil {
			return
		}
	}
	w.Flush()
}
