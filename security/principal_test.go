package security

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"github.com/kraftd/kraftd/internal/testpki"
)

func TestPrincipalRulesMapLikeApache(t *testing.T) {
	m, err := ParsePrincipalRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,` +
		`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,` +
		`RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U,` +
		`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,` +
		`DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Svc,OU=ServiceUsers,O=Org,C=US":      "svc",
		"CN=Ann,OU=SME,O=corp,L=Town,ST=MD,C=US": "ann@sme",
		"cn=ann,ou=sme,dc=corp,dc=com":           "ANN@SME",
		"cN=ann,OU=Unit,O=Some Org":              "ANN",
		"OU=Unit,O=Some Org,C=US":                "OU=Unit,O=Some Org,C=US",
	} {
		if got, err := m.Name(dn); err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", dn, got, err, want)
		}
	}
}

func TestPrincipalRulesEscapesAndGroups(t *testing.T) {
	m, err := ParsePrincipalRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Name(`CN=Last\, First,OU=X,DC=example`); got != `Last\, First` {
		t.Errorf("escaped comma: %q", got)
	}
	// $12 with two groups is $1 then "2"; $5 with two groups is literal.
	m, err = ParsePrincipalRules(`RULE:^CN=(\w+),O=(\w+)$/$12-$5-\$-$2/`)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Name("CN=a,O=b"); got != "a2-$5-$-b" {
		t.Errorf("group references: %q", got)
	}
}

func TestPrincipalRulesRejectMalformed(t *testing.T) {
	for _, rules := range []string{
		`RULE:CN=(.*?),OU=ServiceUsers.*/$1`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/L`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/LU`,
		`DEFAULTS`,
		`something`,
		`RULE:^CN=(a)\1$/$1/`,  // a backreference, which RE2 lacks
		`RULE:^CN=(.*)$/$x/`,   // $ naming no group
		`RULE:^CN=(.*)$/abc\/`, // replacement never closed
	} {
		if _, err := ParsePrincipalRules(rules); err == nil {
			t.Errorf("%s: accepted", rules)
		}
	}
	// Empty rules between commas are ignored, as Apache ignores them.
	m, err := ParsePrincipalRules(",,RULE:^CN=(x)$/$1/,,,DEFAULT,,")
	if err != nil || len(m.rules) != 2 {
		t.Fatalf("empty rules: %v %v", m, err)
	}
}

func TestPrincipalNoRuleApplies(t *testing.T) {
	m, err := ParsePrincipalRules(`RULE:^CN=(admin)$/$1/`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Name("CN=other"); err == nil {
		t.Fatal("a DN no rule matches got a name")
	}
}

// The DN is Java's RFC 2253 text: most specific first, no spaces, RFC
// 2253 keywords only, other attributes as OID=#hex.
func TestDistinguishedNameIsJavaRFC2253(t *testing.T) {
	ca, err := testpki.NewCA("test ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(testpki.Options{Subject: pkix.Name{
		Country: []string{"US"}, Organization: []string{"Org, Inc."}, OrganizationalUnit: []string{"Unit"},
		CommonName: " node-1", SerialNumber: "42",
		ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, Value: "example"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	dn, err := distinguishedName(leaf.Cert)
	if err != nil {
		t.Fatal(err)
	}
	want := `DC=example,2.5.4.5=#13023432,CN=\ node-1,OU=Unit,O=Org\, Inc.,C=US`
	if dn != want {
		t.Errorf("got  %s\nwant %s", dn, want)
	}
	p, err := PrincipalFor(leaf.Cert, mustRules(t, DefaultPrincipalRules))
	if err != nil || p.String() != "User:"+want {
		t.Errorf("principal %s, %v", p, err)
	}
	if p, _ := PrincipalFor(nil, mustRules(t, DefaultPrincipalRules)); p != Anonymous {
		t.Errorf("no certificate: %s", p)
	}
}

func mustRules(t *testing.T, text string) *PrincipalMapper {
	t.Helper()
	m, err := ParsePrincipalRules(text)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
