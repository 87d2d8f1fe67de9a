package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/protocol"
	kraftdsasl "github.com/kraftd/kraftd/security/sasl"
)

// Request is one decoded request as a handler sees it.
type Request struct {
	Header   protocol.RequestHeader
	Body     kmsg.Request
	Listener string
	Remote   net.Addr
	// Principal is who the connection proved to be: User:<name> on a
	// SASL listener, the mapped certificate DN on mutual TLS, else
	// ANONYMOUS.
	Principal Principal
	// ClientHost is a forwarded request's client address (Envelope's
	// ClientHostAddress, as Java prints it); empty for a direct request,
	// whose client is Remote.
	ClientHost string
	// Forwarded is set on a request a broker forwarded in an Envelope.
	Forwarded bool
	// Ctx is cancelled when the connection closes or the server stops, so a
	// waiting handler (a parked Fetch) can give up.
	Ctx context.Context
}

// connBuffer is the size of each connection's read buffer and of its
// write buffer: enough for the small requests and answers that make up
// most traffic; larger frames are read into and written from their own
// slices past it. Kept small, since every connection holds two.
const connBuffer = 16 << 10

// serveConn runs one connection: the calling goroutine reads and dispatches
// each request to a goroutine of its own; responses leave in request order.
func (s *Server) serveConn(ctx context.Context, c net.Conn, listener string, principal Principal) {
	r := bufio.NewReaderSize(c, connBuffer)
	sasl := s.cfg.SASL[listener]
	var session *kraftdsasl.Session
	if sasl != nil {
		log := s.log.With().Str("remote", c.RemoteAddr().String()).Str("listener", listener).Logger()
		var ok bool
		if session, ok = s.authenticate(ctx, c, r, sasl, log); !ok {
			// authenticate closes c after the failed-login delay.
			s.countConnection(listener, ConnSASLFailed)
			return
		}
		principal = session.Principal
	}
	s.countConnection(listener, ConnAccepted)
	if s.meter != nil {
		defer s.meter.ConnectionClosed(listener)
	}
	ctx, cancel := context.WithCancel(ctx)
	log := s.log.With().Str("remote", c.RemoteAddr().String()).Str("listener", listener).Str("principal", principal.String()).Logger()
	resp := newResponder(c, cancel, s.decoding, s.cfg.QueuedMaxRequests, s.idle())
	defer func() {
		// Answer what was asked before the client stopped sending (a
		// half-closed connection still reads), then close.
		resp.pending.Wait()
		cancel()
		c.Close()
	}()

	for {
		frame, err := s.readFrame(ctx, c, r, resp)
		if err != nil {
			if ctx.Err() == nil {
				logUnreadable(log, err, s.cfg.MaxFrameSize)
			}
			return
		}
		if session != nil {
			if handled, ok := s.checkSession(ctx, c, r, frame, session, listener, sasl, resp, log); !ok {
				return
			} else if handled {
				continue
			}
		}
		req, errResp, err := s.decode(frame)
		if err != nil || errResp != nil {
			s.decoding.release(len(frame))
		}
		if err != nil {
			logRefused(log, err)
			p := &pending{close: true}
			if resp.add(ctx, p) {
				resp.finish(p)
			}
			return
		}
		p := &pending{}
		if errResp != nil {
			log.Debug().Str("api", kmsg.NameForKey(req.Header.Key)).Int16("version", req.Header.Version).
				Int32("correlation_id", req.Header.CorrelationID).
				Msgf("ApiVersions v%d is not supported; answered at v0 with UNSUPPORTED_VERSION", req.Header.Version)
			if !resp.add(ctx, p) {
				return
			}
			p.frame = protocol.AppendResponse(nil, req.Header, errResp)
			resp.finish(p)
			continue
		}
		// The decoded request lives until its answer is built: its frame's
		// charge stays taken until then (responder.finish).
		p.reserve, p.charge = responseReserve(req.Body), decodeCharge(len(frame))
		frame = nil // not kept alive while add waits
		if !resp.add(ctx, p) {
			s.decoding.give(p.charge)
			return
		}
		shrinkAnswer(req.Body, p.reserve)
		req.Listener, req.Remote, req.Principal, req.Ctx = listener, c.RemoteAddr(), principal, ctx
		def := handlers[req.Header.Key]
		if def.start != nil {
			s.start(log, req, resp, p, def)
			continue
		}
		began := s.began()
		go s.handle(log, req, resp, p, began, func() (kmsg.Response, error) { return s.dispatch(def, req) })
	}
}

// idle is connections.max.idle.ms.
func (s *Server) idle() time.Duration { return time.Duration(s.cfg.ConnMaxIdleMs) * time.Millisecond }

// readFrame waits for the next frame and reads it once the node-wide
// memory budget has room for its charge, refusing from its first bytes a
// frame that could never fit; the caller releases len(frame) after
// decoding, or hands its charge to the request's pending slot. A
// connection that sends nothing for connections.max.idle.ms while it has
// no request in flight, and was answered nothing in that time, is idle,
// and the error says so.
func (s *Server) readFrame(ctx context.Context, c net.Conn, r *bufio.Reader, resp *responder) ([]byte, error) {
	for {
		// Peek consumes nothing, so a timeout here loses no bytes, and a
		// client waiting for a parked answer can be waited for again.
		c.SetReadDeadline(time.Now().Add(s.idle()))
		_, err := r.Peek(1)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, err
		}
		if resp.idleFor(s.idle()) {
			return nil, errIdle
		}
	}
	n, err := protocol.ReadFrameSize(r, s.cfg.MaxFrameSize)
	if err != nil {
		return nil, err
	}
	if n > smallFrame {
		key, err := r.Peek(2)
		if err != nil {
			return nil, err
		}
		k := int16(binary.BigEndian.Uint16(key))
		if n > smallRequestMax && !bulkRequests[k] {
			return nil, &frameTooLarge{key: k, size: n}
		}
		if s.decoding.overLimit(n) {
			return nil, &frameOverBudget{key: k, size: n, limit: s.decoding.limit}
		}
	}
	return s.readFrameBody(ctx, r, n)
}

// readFrameBody reads the n-byte body whose size prefix was just read, once
// the memory budget has room for its charge; the caller releases it.
func (s *Server) readFrameBody(ctx context.Context, r *bufio.Reader, n int32) ([]byte, error) {
	if !s.decoding.acquire(ctx, int(n)) {
		return nil, ctx.Err()
	}
	frame, err := protocol.ReadFrameBody(r, n)
	if err != nil {
		s.decoding.release(int(n))
		return nil, err
	}
	return frame, nil
}

// decode turns a frame into a request. It returns an immediate error
// response for an ApiVersions request at a version kraftd does not know (the
// client then retries at a version it offers), and a *refusal, meaning
// "close the connection", for everything Apache also closes on: unknown
// keys, keys not served on this listener, unsupported versions,
// undecodable bodies.
func (s *Server) decode(frame []byte) (*Request, kmsg.Response, error) {
	h, body, err := protocol.ParseRequestHeader(frame)
	if err != nil {
		return nil, nil, refuseHeader(h, len(frame), err)
	}
	req := &Request{Header: h}
	name := kmsg.NameForKey(h.Key)
	if !s.registry.Supports(h.Key, h.Version) {
		if h.Key == protocol.ApiVersionsKey {
			return req, s.unsupportedApiVersions(), nil
		}
		served, ok := s.registry.Lookup(h.Key)
		if !ok {
			return nil, nil, &refusal{h, true, fmt.Sprintf("%s (key %d) is not served on a controller listener", name, h.Key)}
		}
		return nil, nil, &refusal{h, true, fmt.Sprintf("%s v%d is not supported (kraftd serves v%d-%d)", name, h.Version, served.Min, served.Max)}
	}
	req.Body = kmsg.RequestForKey(h.Key)
	req.Body.SetVersion(h.Version)
	if err := req.Body.ReadFrom(body); err != nil {
		return nil, nil, &refusal{h, true, "body does not decode: " + describeDecodeError(err, name, h.Version, len(body))}
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

// began is when a request began to be handled, for the meter.
func (s *Server) began() time.Time {
	if s.meter == nil {
		return time.Time{}
	}
	return time.Now()
}

// handle answers a request on a goroutine of its own.
func (s *Server) handle(log zerolog.Logger, req *Request, resp *responder, p *pending, began time.Time, run func() (kmsg.Response, error)) {
	if !s.answer(log, req, resp, p, began, run) {
		withHeader(log.Error(), req.Header).Msg("handler gave no answer; closing connection")
		p.close = true
		resp.finish(p)
	}
}

// start begins a request on the connection's goroutine (handlerDef.start,
// after the authorizer's check): a request it answers at once is answered
// from here, with no goroutine woken for it; the rest of one it does not
// runs on a goroutine of its own.
func (s *Server) start(log zerolog.Logger, req *Request, resp *responder, p *pending, def handlerDef) {
	began := s.began()
	var rest handlerFunc
	if s.answer(log, req, resp, p, began, func() (kmsg.Response, error) {
		if out := s.refused(req); out != nil {
			return out, nil
		}
		out, more := def.start(s, req)
		rest = more
		return out, nil
	}) {
		return
	}
	go s.handle(log, req, resp, p, began, func() (kmsg.Response, error) { return rest(s, req) })
}

// answer runs a handler and writes its answer in turn, unless it returned
// neither a response nor an error (a start whose rest runs elsewhere); it
// reports whether it answered.
func (s *Server) answer(log zerolog.Logger, req *Request, resp *responder, p *pending, began time.Time, run func() (kmsg.Response, error)) bool {
	out, err, panicked := runHandler(log, req, run)
	if out == nil && err == nil && !panicked {
		return false
	}
	defer resp.finish(p)
	if panicked {
		p.close = true
		return true
	}
	if s.meter != nil {
		s.meter.Request(req.Listener, req.Header.Key, time.Since(began), err != nil)
	}
	if err != nil {
		if req.Ctx.Err() == nil {
			withHeader(log.Warn(), req.Header).Str("reason", err.Error()).Msg("request failed; closing connection")
		}
		p.close = true
		return true
	}
	out.SetVersion(req.Header.Version)
	if chunk, ok := out.(*node.SnapshotChunk); ok {
		if p.frame, p.tail, err = chunkFrame(req.Header, chunk); err != nil {
			withHeader(log.Error(), req.Header).Err(err).Msg("closing connection")
			chunk.Close()
			p.close = true
		}
		return true
	}
	buf := newAnswerFrame()
	*buf = protocol.AppendResponse(*buf, req.Header, out)
	p.frame, p.recycled = *buf, buf
	if f, ok := out.(*kmsg.FetchResponse); ok {
		recycleRecords(f)
	}
	return true
}

// runHandler runs a handler; a handler bug must cost one connection, never
// the process.
func runHandler(log zerolog.Logger, req *Request, run func() (kmsg.Response, error)) (out kmsg.Response, err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			withHeader(log.Error(), req.Header).Interface("panic", v).Bytes("stack", debug.Stack()).Msg("handler panicked; closing connection")
			out, err, panicked = nil, nil, true
		}
	}()
	out, err = run()
	return out, err, false
}
