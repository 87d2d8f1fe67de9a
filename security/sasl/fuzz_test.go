package sasl

import (
	"testing"

	"github.com/xdg-go/scram"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/security"
)

// noCredentials is a metadata image with no SCRAM credentials.
type noCredentials struct{}

func (noCredentials) ScramCredential(string, int8) (metadata.UserScramCredentialRecord, bool) {
	return metadata.UserScramCredentialRecord{}, false
}

// FuzzParseJAAS feeds sasl.jaas.config values to the JAAS parser: it
// must return modules or an error, never panic, and an error must not
// repeat an option's value.
func FuzzParseJAAS(f *testing.F) {
	f.Add(PlainLoginModule + ` required
	username="admin" password="admin-secret"
	user_admin="admin-secret" user_alice="alice-secret";`)
	f.Add(ScramLoginModule + ` required username='admin' password="a\"b";`)
	f.Add(`a required; b optional k=v /* comment */ // line` + "\n;")
	f.Add(`x required k="unterminated`)
	f.Add(`/* open`)
	f.Fuzz(func(t *testing.T, text string) {
		modules, err := parseJAAS(text)
		if err == nil && len(modules) == 0 {
			t.Fatal("no module and no error")
		}
	})
}

// FuzzSASLTokens feeds client tokens to the PLAIN and SCRAM servers,
// which read them straight off the network.
func FuzzSASLTokens(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"), []byte("c=biws,r=x,p=AAAA"))
	f.Add([]byte("alice\x00alice\x00pw\x00"), []byte(""))
	f.Add([]byte("n,,n=carol,r=abcdef"), []byte("c=biws,r=abcdefXYZ,p=dGVzdA=="))
	f.Add([]byte("n,a=x,n=x=2C,r=1"), []byte(","))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		p := &plainExchange{users: map[string]security.Secret{"alice": {Value: "alice-secret", Set: true}}}
		if _, done, err := p.Step(first); done != (err == nil) {
			t.Fatal("PLAIN done and error disagree")
		}
		ex, err := newScramExchange(noCredentials{}, scram.SHA256, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, done, err := ex.Step(first); err == nil && !done {
			ex.Step(second)
		}
	})
}
