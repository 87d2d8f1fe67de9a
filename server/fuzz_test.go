package server

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
)

// FuzzDecodeRequest feeds frames to the server's request decoder: every
// served key's body decoder (kmsg) sits behind it. It must return a request,
// an error response or an error, and never panic.
func FuzzDecodeRequest(f *testing.F) {
	for key := range handlers {
		req := kmsg.RequestForKey(key)
		req.SetVersion(handlers[key].max)
		f.Add(req.AppendTo(protocol.AppendRequestHeader(nil, req, 1, "fuzz")))
	}
	f.Add([]byte{0, 18, 0, 9, 0, 0, 0, 1, 0, 0, 0})
	cfg, err := ParseConfig(map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://127.0.0.1:0", "log.dirs": "/nonexistent",
	})
	if err != nil {
		f.Fatal(err)
	}
	s := New(cfg, nil, zerolog.Nop())
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, errResp, err := s.decode(frame)
		if err == nil && req == nil {
			t.Fatal("no request and no error")
		}
		if err == nil && errResp == nil && req.Body == nil {
			t.Fatal("decoded request without a body")
		}
	})
}

// FuzzDecodePrincipal covers the forwarded-principal decoder of Envelope.
func FuzzDecodePrincipal(f *testing.F) {
	f.Add([]byte{0, 0, 5, 'U', 's', 'e', 'r', 10, 'A', 'N', 'O', 'N', 'Y', 'M', 'O', 'U', 'S', 0, 0})
	f.Add([]byte{0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodePrincipal(b)
	})
}
