package format

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/base64"
	"hash"
	"strings"
	"testing"

	"github.com/xdg-go/scram"

	"github.com/kraftd/kraftd/metadata"
)

func TestParseScramArgument(t *testing.T) {
	valid := []struct {
		in         string
		mech, name string
		iterations int
		salt       string // base64; "" for random
		password   string
	}{
		{"SCRAM-SHA-512=[name=admin,password=secret]", "SCRAM-SHA-512", "admin", 0, "", "secret"},
		{"  SCRAM-SHA-256=[name=alice,password=alice-secret]\t", "SCRAM-SHA-256", "alice", 0, "", "alice-secret"},
		{`SCRAM-SHA-512=[name="bob",password="a=b"]`, "SCRAM-SHA-512", "bob", 0, "", "a=b"},
		{`SCRAM-SHA-256=[name=alice,iterations=8192,salt="N3E=",password=pw]`, "SCRAM-SHA-256", "alice", 8192, "N3E=", "pw"},
		{`SCRAM-SHA-256=[name=alice,salt=N3E,password=pw]`, "SCRAM-SHA-256", "alice", 0, "N3E=", "pw"},
		{`SCRAM-SHA-512=[name=x,password=old,password=new]`, "SCRAM-SHA-512", "x", 0, "", "new"},
	}
	for _, c := range valid {
		a, err := parseScramArgument(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if a.mech.name != c.mech || a.name != c.name || a.iterations != c.iterations || a.password == nil || *a.password != c.password {
			t.Errorf("%s: got %s name %q iterations %d password %v", c.in, a.mech.name, a.name, a.iterations, a.password)
		}
		if c.salt != "" && base64.StdEncoding.EncodeToString(a.salt) != c.salt {
			t.Errorf("%s: salt %x", c.in, a.salt)
		}
	}

	invalid := map[string]string{
		"SCRAM-SHA-512":                                            "no '='",
		"SCRAM-SHA-1=[name=a,password=b]":                          "not supported",
		"scram-sha-512=[name=a,password=b]":                        "not supported",
		"SCRAM-SHA-512=name=a,password=b":                          "enclosed in [ and ]",
		"SCRAM-SHA-512=[name=a,password=b":                         "enclosed in [ and ]",
		"SCRAM-SHA-512=[":                                          "enclosed in [ and ]",
		"SCRAM-SHA-512=[]":                                         "no '=' in SCRAM component",
		"SCRAM-SHA-512=[password=b]":                               "'name' is required",
		"SCRAM-SHA-512=[name=a]":                                   "one of 'password' or 'saltedpassword'",
		"SCRAM-SHA-512=[name=a,saltedpassword=YCE=]":               "needs 'salt'",
		"SCRAM-SHA-512=[name=a,salt=%%%,password=b]":               "salt",
		"SCRAM-SHA-512=[name=a,salt=N3E=,saltedpassword=%%]":       "saltedpassword is not base64",
		"SCRAM-SHA-512=[name=a,password=b,iterations=lots]":        "not a number",
		"SCRAM-SHA-512=[name=a,password=b,iterations=4095]":        "between 4096 and 16384",
		"SCRAM-SHA-256=[name=a,password=b,iterations=16385]":       "between 4096 and 16384",
		"SCRAM-SHA-512=[name=a,password=b,colour=blue]":            `unknown SCRAM configuration "colour"`,
		"SCRAM-SHA-512=[name=a,password=b, iterations=4096]":       `unknown SCRAM configuration " iterations"`,
		"SCRAM-SHA-512=[name=a,password=b,iterations=99999999999]": "not a number",
	}
	for in, want := range invalid {
		if _, err := parseScramArgument(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", in, err, want)
		}
	}
}

// The record --add-scram derives lets a client that knows the password
// authenticate against xdg-go/scram's server, and the saltedpassword form
// derives the same keys as the password form.
func TestScramRecordAuthenticates(t *testing.T) {
	arg, err := parseScramArgument(`SCRAM-SHA-512=[name=admin,iterations=8192,salt="c2FsdHNhbHQ=",password=secret]`)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := arg.record()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Mechanism != 2 || rec.Iterations != 8192 || string(rec.Salt) != "saltsalt" || rec.Name != "admin" {
		t.Fatalf("record %+v", rec)
	}
	salted, err := saltedPassword(sha512.New, "secret", rec.Salt, 8192)
	if err != nil {
		t.Fatal(err)
	}
	arg2, err := parseScramArgument(`SCRAM-SHA-512=[name=admin,iterations=8192,salt="c2FsdHNhbHQ=",saltedpassword="` +
		base64.StdEncoding.EncodeToString(salted) + `"]`)
	if err != nil {
		t.Fatal(err)
	}
	rec2, err := arg2.record()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.StoredKey, rec2.StoredKey) || !bytes.Equal(rec.ServerKey, rec2.ServerKey) {
		t.Errorf("saltedpassword derived other keys than password")
	}

	for _, password := range []string{"secret", "wrong"} {
		ok := scramConversation(t, rec, password)
		if ok != (password == "secret") {
			t.Errorf("password %q: authenticated %v", password, ok)
		}
	}

	random, err := parseScramArgument("SCRAM-SHA-256=[name=a,password=b]")
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := random.record()
	r2, _ := random.record()
	if len(r1.Salt) != scramSaltBytes || bytes.Equal(r1.Salt, r2.Salt) || r1.Iterations != 4096 || r1.Mechanism != 1 {
		t.Errorf("random salts %x %x, iterations %d", r1.Salt, r2.Salt, r1.Iterations)
	}
}

// saltedPassword is PBKDF2 over the password's UTF-8 bytes, the value a
// user passes as saltedpassword.
func saltedPassword(h func() hash.Hash, password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// scramConversation runs one SCRAM-SHA-512 exchange between an xdg-go
// client with password and an xdg-go server holding rec.
func scramConversation(t *testing.T, rec *metadata.UserScramCredentialRecord, password string) bool {
	t.Helper()
	server, err := scram.SHA512.NewServer(func(user string) (scram.StoredCredentials, error) {
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(rec.Salt), Iters: int(rec.Iterations)},
			StoredKey:  rec.StoredKey, ServerKey: rec.ServerKey,
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	client, err := scram.SHA512.NewClientUnprepped(rec.Name, password, "")
	if err != nil {
		t.Fatal(err)
	}
	cc, sc := client.NewConversation(), server.NewConversation()
	msg, err := cc.Step("")
	for err == nil && !sc.Done() {
		if msg, err = sc.Step(msg); err != nil {
			break
		}
		msg, err = cc.Step(msg)
	}
	return err == nil && sc.Valid()
}

func FuzzParseScramArgument(f *testing.F) {
	for _, s := range []string{
		"SCRAM-SHA-512=[name=admin,password=secret]",
		`SCRAM-SHA-256=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]`,
		"SCRAM-SHA-512=[]", "=", "SCRAM-SHA-256=[name=a,password=b,iterations=-1]", `SCRAM-SHA-512=["]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := parseScramArgument(s)
		if err != nil {
			return
		}
		if a.name == "" && !strings.Contains(s, "name=") {
			t.Fatalf("%q parsed without a name", s)
		}
		if a.password == nil && (a.saltedPassword == nil || a.salt == nil) {
			t.Fatalf("%q parsed without a password or a salted password with its salt", s)
		}
		if a.iterations != 0 && (a.iterations < scramMinIterations || a.iterations > scramMaxIterations) {
			t.Fatalf("%q parsed with iterations %d", s, a.iterations)
		}
		if a.password == nil {
			if _, err := a.record(); err != nil {
				t.Fatalf("%q: record: %v", s, err)
			}
		}
	})
}
