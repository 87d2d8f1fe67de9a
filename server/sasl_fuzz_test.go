package server

import (
	"io"
	"net"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
)

// FuzzSASLStateMachine feeds frames to an authenticating connection, the
// first code to read an unauthenticated client's bytes: it must answer,
// refuse or finish, never panic.
func FuzzSASLStateMachine(f *testing.F) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	f.Add(hs.AppendTo(protocol.AppendRequestHeader(nil, hs, 1, "fuzz")), auth.AppendTo(protocol.AppendRequestHeader(nil, auth, 2, "fuzz")))
	hs0 := kmsg.NewPtrSASLHandshakeRequest()
	hs0.SetVersion(0)
	hs0.Mechanism = "SCRAM-SHA-256"
	f.Add(hs0.AppendTo(protocol.AppendRequestHeader(nil, hs0, 1, "fuzz")), []byte("n,,n=alice,r=abc"))
	cfg, err := ParseConfig(map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://127.0.0.1:0", "log.dirs": "/nonexistent",
		"listener.security.protocol.map":                   "CONTROLLER:SASL_PLAINTEXT",
		"listener.name.controller.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
		"listener.name.controller.plain.sasl.jaas.config":  testPlainJAAS,
		"sasl.mechanism.controller.protocol":               "PLAIN",
	})
	if err != nil {
		f.Fatal(err)
	}
	s := New(cfg, &scramBackend{principalBackend: &principalBackend{}}, zerolog.Nop())
	f.Fuzz(func(t *testing.T, first, second []byte) {
		server, client := net.Pipe()
		defer server.Close()
		go io.Copy(io.Discard, client)
		defer client.Close()
		a := s.newSASLConn(writeTo(server), cfg.SASL["CONTROLLER"], server.RemoteAddr(), nil)
		if done, err := a.serve(first); err == nil && !done {
			a.serve(second)
		}
	})
}
