package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func requestFrame(req kmsg.Request, corr int32, clientID string) []byte {
	b := AppendRequestHeader(nil, req, corr, clientID)
	return req.AppendTo(b)
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		req      kmsg.Request
		version  int16
		flexible bool
	}{
		{kmsg.NewPtrApiVersionsRequest(), 0, false},
		{kmsg.NewPtrApiVersionsRequest(), 3, true},
		{kmsg.NewPtrFetchRequest(), 11, false},
		{kmsg.NewPtrFetchRequest(), 18, true},
		{kmsg.NewPtrVoteRequest(), 0, true},
		{kmsg.NewPtrBeginQuorumEpochRequest(), 0, false},
	} {
		tc.req.SetVersion(tc.version)
		frame := requestFrame(tc.req, 77, "raft-client-1")
		h, body, err := ParseRequestHeader(frame)
		if err != nil {
			t.Fatalf("key %d v%d: %v", tc.req.Key(), tc.version, err)
		}
		if h.Key != tc.req.Key() || h.Version != tc.version || h.CorrelationID != 77 || h.ClientID != "raft-client-1" || h.Flexible != tc.flexible {
			t.Fatalf("parsed %+v", h)
		}
		back := kmsg.RequestForKey(h.Key)
		back.SetVersion(h.Version)
		if err := back.ReadFrom(body); err != nil {
			t.Fatalf("body: %v", err)
		}
	}
}

func TestApiVersionsAtUnknownVersionUsesFlexibleHeader(t *testing.T) {
	// A client newer than kmsg sends ApiVersions v9: the header is still v2.
	frame := []byte{0, 18, 0, 9, 0, 0, 0, 5, 0, 1, 'c', 0}
	h, _, err := ParseRequestHeader(frame)
	if err != nil || !h.Flexible || h.Version != 9 {
		t.Fatalf("%+v %v", h, err)
	}
}

func TestBadHeaders(t *testing.T) {
	for name, frame := range map[string][]byte{
		"empty":          {},
		"short":          {0, 18, 0},
		"unknown key":    {0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0, 0},
		"client id past": {0, 1, 0, 4, 0, 0, 0, 1, 0, 50, 'x'},
	} {
		if _, _, err := ParseRequestHeader(frame); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, _, err := ParseRequestHeader([]byte{0x7f, 0, 0, 0, 0, 0, 0, 1}); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestReadFrameSizes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		wantErr error
	}{
		{"negative", []byte{0xff, 0xff, 0xff, 0xfe}, ErrFrameSize},
		{"oversized", binary.BigEndian.AppendUint32(nil, 200), ErrFrameSize},
		{"tls", []byte{0x16, 0x03, 0x01, 0x02, 0x00}, ErrFrameSize},
		{"http", []byte("GET / HTTP/1.1\r\n"), ErrFrameSize},
		{"truncated", []byte{0, 0, 0, 10, 1, 2}, io.ErrUnexpectedEOF},
	} {
		_, err := ReadFrame(bytes.NewReader(tc.in), 100)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.wantErr)
		}
	}
	frame, err := ReadFrame(bytes.NewReader(AppendFrame(nil, []byte("abc"))), 100)
	if err != nil || string(frame) != "abc" {
		t.Fatalf("%q %v", frame, err)
	}
	frame, err = ReadFrame(bytes.NewReader([]byte{0, 0, 0, 0}), 100)
	if err != nil || len(frame) != 0 {
		t.Fatalf("zero frame: %q %v", frame, err)
	}
}

func TestResponseHeaderVersions(t *testing.T) {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	out := AppendResponse(nil, RequestHeader{Key: 18, Version: 3, CorrelationID: 9}, resp)
	// Header v0: size, correlation id, then the body's error code straight away.
	if got := binary.BigEndian.Uint32(out[4:]); got != 9 || out[8] != 0 || out[9] != 0 {
		t.Fatalf("% x", out[:12])
	}
	if !ResponseHeaderFlexible(55, 2) || ResponseHeaderFlexible(1, 11) || !ResponseHeaderFlexible(1, 12) {
		t.Fatal("header flexibility")
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(2)
	dq := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	dq.SetVersion(2)
	dq.ErrorCode = 6
	frame := AppendResponse(nil, RequestHeader{Key: 55, Version: 2, CorrelationID: 4}, dq)
	corr, back, err := ParseResponse(frame[4:], req)
	if err != nil || corr != 4 || back.(*kmsg.DescribeQuorumResponse).ErrorCode != 6 {
		t.Fatalf("%d %+v %v", corr, back, err)
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	r.Register(55, 0, 2)
	r.Register(18, 0, 4)
	if !r.Supports(55, 2) || r.Supports(55, 3) || r.Supports(1, 0) {
		t.Fatal("supports")
	}
	if keys := r.ApiKeys(); len(keys) != 2 || keys[0].ApiKey != 18 || keys[1].MaxVersion != 2 {
		t.Fatalf("%+v", keys)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("duplicate registration did not panic")
		}
	}()
	r.Register(55, 0, 1)
}

func FuzzParseRequestHeader(f *testing.F) {
	for _, req := range []kmsg.Request{kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrFetchRequest(), kmsg.NewPtrVoteRequest(), kmsg.NewPtrDescribeQuorumRequest()} {
		req.SetVersion(req.MaxVersion())
		f.Add(requestFrame(req, 1, "seed"))
	}
	f.Add([]byte{0, 18, 0, 9, 0, 0, 0, 5, 0xff, 0xff, 3, 1, 1})
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := ParseRequestHeader(frame)
		if err != nil {
			return
		}
		// A parsed header leads to a body decode that must fail cleanly, never panic.
		req := kmsg.RequestForKey(h.Key)
		if h.Version >= 0 && h.Version <= req.MaxVersion() {
			req.SetVersion(h.Version)
			_ = req.ReadFrom(body)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add(AppendFrame(nil, []byte("abc")))
	f.Add([]byte{0x16, 0x03, 0x01, 0x00})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		frame, err := ReadFrame(bytes.NewReader(in), 1<<16)
		if err == nil && len(frame) > 1<<16 {
			t.Fatalf("frame of %d bytes above the limit", len(frame))
		}
	})
}
