package security

import "testing"

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
