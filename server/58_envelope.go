package server

// Envelope: v0
//
// A broker forwards an admin request it received (CreateTopics,
// IncrementalAlterConfigs, ...) wrapped in an Envelope: RequestData is the
// client's request header and body, RequestPrincipal the client's principal
// (KafkaPrincipalSerde: int16 version 0, then DefaultPrincipalData v0,
// flexible: Type, Name, TokenAuthenticated), ClientHostAddress its raw IP.
// The inner request is dispatched to its own handler and the inner response
// (header for the inner correlation id, then body) goes back as
// ResponseData.
//
// Apache's error mapping, which the broker acts on:
//   - the principal does not decode: PRINCIPAL_DESERIALIZATION_FAILURE;
//   - the inner header or body does not parse, or is at a version kraftd
//     does not serve: UNSUPPORTED_VERSION (the broker closes the client);
//   - the inner key is not forwardable: INVALID_REQUEST;
//   - the inner response says NOT_CONTROLLER anywhere: the envelope carries
//     NOT_CONTROLLER and no data, so the broker finds the new controller.

import (
	"errors"
	"net/netip"
	"reflect"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/protocol"
)

func init() {
	// The inner request is checked for its own principal (dispatch).
	regKey(58, 0, 0, (*Server).handleEnvelope,
		accessRule{name: "Envelope", cluster: authz.OpClusterAction})
}

// forwardable are the API keys Apache marks forwardable (ApiKeys.java).
var forwardable = map[int16]bool{
	19: true, 20: true, 30: true, 31: true, 33: true, 37: true, 38: true, 39: true, 40: true,
	43: true, 44: true, 45: true, 46: true, 49: true, 51: true, 55: true, 57: true, 64: true,
	67: true, 80: true, 81: true,
}

// decodePrincipal reads KafkaPrincipalSerde's encoding.
func decodePrincipal(b []byte) (Principal, error) {
	r := kbin.Reader{Src: b}
	var p Principal
	if v := r.Int16(); v != 0 {
		return p, errors.New("unknown principal serialization version")
	}
	p.Type = r.CompactString()
	p.Name = r.CompactString()
	p.TokenAuthenticated = r.Bool()
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
	if err := r.Complete(); err != nil {
		return p, err
	}
	return p, nil
}

func (s *Server) handleEnvelope(r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EnvelopeRequest)
	resp := req.ResponseKind().(*kmsg.EnvelopeResponse)
	forwarded, err := decodePrincipal(req.RequestPrincipal)
	if err != nil {
		resp.ErrorCode = kerr.PrincipalDeserializationFailure.Code
		return resp, nil
	}
	h, body, err := protocol.ParseRequestHeader(req.RequestData)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	if !forwardable[h.Key] {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	def, served := handlers[h.Key]
	if !served || !s.registry.Supports(h.Key, h.Version) {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	// The inner request speaks for the broker's client, not the broker.
	inner := &Request{Header: h, Body: kmsg.RequestForKey(h.Key), Listener: r.Listener, Remote: r.Remote, Principal: forwarded,
		ClientHost: forwardedHost(req.ClientHostAddress), Forwarded: true, Ctx: r.Ctx}
	inner.Body.SetVersion(h.Version)
	if err := inner.Body.ReadFrom(body); err != nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	innerResp, err := s.dispatch(def, inner)
	if err != nil {
		return nil, err
	}
	innerResp.SetVersion(h.Version)
	redirect := carriesCode(reflect.ValueOf(innerResp), kerr.NotController.Code)
	if h.Key == 55 {
		// Only the raft leader answers DescribeQuorum.
		redirect = redirect || carriesCode(reflect.ValueOf(innerResp), kerr.NotLeaderForPartition.Code)
	}
	if redirect {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	// AppendResponse writes a size-prefixed frame; ResponseData has no size.
	resp.ResponseData = protocol.AppendResponse(nil, h, innerResp)[4:]
	return resp, nil
}

// carriesCode reports whether any ErrorCode field of a response, at any
// depth, is code.
func carriesCode(v reflect.Value, code int16) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && carriesCode(v.Elem(), code)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if v.Type().Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 && int16(f.Int()) == code {
				return true
			}
			if (f.Kind() == reflect.Slice || f.Kind() == reflect.Struct) && carriesCode(f, code) {
				return true
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return false
		}
		for i := range v.Len() {
			if carriesCode(v.Index(i), code) {
				return true
			}
		}
	}
	return false
}

// forwardedHost renders Envelope's ClientHostAddress (4 or 16 raw bytes)
// as Java prints the address; bytes that are no address give "", and the
// broker's own address stands in.
func forwardedHost(raw []byte) string {
	ip, ok := netip.AddrFromSlice(raw)
	if !ok {
		return ""
	}
	return authz.JavaHostAddress(ip)
}
