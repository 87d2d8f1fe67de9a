package server

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/internal/testpki"
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

// FuzzKeystorePEM feeds keystore file contents (a key, encrypted or not,
// and a chain) to the PEM reader and the PKCS#8 decryption behind it: it
// must return a certificate or an error, never panic.
func FuzzKeystorePEM(f *testing.F) {
	ca, err := testpki.NewCA("fuzz ca")
	if err != nil {
		f.Fatal(err)
	}
	leaf, err := ca.Issue(testpki.Options{})
	if err != nil {
		f.Fatal(err)
	}
	enc, err := leaf.EncryptedKeyPEM("pw")
	if err != nil {
		f.Fatal(err)
	}
	maxPBKDF2Iterations = 4096 // so that no input takes seconds
	f.Add(leaf.KeystorePEM(), false)
	f.Add(append(enc, leaf.ChainPEM()...), true)
	f.Fuzz(func(t *testing.T, data []byte, withPassword bool) {
		cert, err := pemKeyPair(data, data, Secret{Value: "pw", Set: withPassword})
		if (cert == nil) == (err == nil) {
			t.Fatalf("certificate %v with error %v", cert, err)
		}
	})
}

// FuzzPrincipalRules feeds ssl.principal.mapping.rules and a DN to the
// rules parser and mapper: an error or a name, never a panic.
func FuzzPrincipalRules(f *testing.F) {
	f.Add(`RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L,DEFAULT`, "CN=a,OU=b")
	f.Add(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$12\$/U`, `CN=x\, y,O=z`)
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := ParsePrincipalRules(rules)
		if err != nil {
			return
		}
		_, _ = m.Name(dn)
	})
}
