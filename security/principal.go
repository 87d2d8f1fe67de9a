package security

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Principal is who a connection or a forwarded request speaks for, as
// Apache's KafkaPrincipal names it: a type ("User") and a name.
type Principal struct {
	Type, Name         string
	TokenAuthenticated bool // a delegation token's principal (Envelope)
}

// Anonymous is the principal of a connection that proved nothing: a
// PLAINTEXT client, or a TLS client that sent no certificate.
var Anonymous = Principal{Type: "User", Name: "ANONYMOUS"}

func (p Principal) String() string { return p.Type + ":" + p.Name }

// distinguishedName renders a certificate's subject as Java's
// X500Principal.getName() does (RFC 2253): the most specific RDN first,
// only the keywords RFC 2253 defines, every other attribute as its OID
// with the DER value in hex. Principal mapping rules are written against
// this text, so it must be Java's, not Go's pkix.Name.String (which knows
// other keywords).
func distinguishedName(cert *x509.Certificate) (string, error) {
	var seq []rdnSET
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) > 0 {
		return "", fmt.Errorf("certificate subject does not decode: %v", err)
	}
	rdns := make([]string, 0, len(seq))
	for i := len(seq) - 1; i >= 0; i-- {
		attrs := make([]string, 0, len(seq[i]))
		for _, a := range seq[i] {
			attrs = append(attrs, formatAttribute(a))
		}
		rdns = append(rdns, strings.Join(attrs, "+"))
	}
	return strings.Join(rdns, ","), nil
}

// rdnSET is one relative distinguished name; encoding/asn1 reads a slice
// type named ...SET as a SET OF.
type rdnSET []rawAttribute

type rawAttribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rfc2253Keywords are the attribute keywords RFC 2253 section 2.3 defines.
var rfc2253Keywords = map[string]string{
	"2.5.4.3": "CN", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU", "2.5.4.6": "C",
	"2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}

func formatAttribute(a rawAttribute) string {
	oid := a.Type.String()
	if kw, ok := rfc2253Keywords[oid]; ok {
		var s string
		if rest, err := asn1.Unmarshal(a.Value.FullBytes, &s); err == nil && len(rest) == 0 {
			return kw + "=" + escapeDNValue(s)
		}
		return kw + "=#" + hex.EncodeToString(a.Value.FullBytes)
	}
	return oid + "=#" + hex.EncodeToString(a.Value.FullBytes)
}

// escapeDNValue escapes what RFC 2253 section 2.4 requires.
func escapeDNValue(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case strings.ContainsRune(`,+"\<>;`, r),
			i == 0 && (r == '#' || r == ' '),
			i == len(s)-1 && r == ' ':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// PrincipalMapper turns a certificate's distinguished name into a
// principal name with ssl.principal.mapping.rules, Apache's syntax: a
// comma-separated list of DEFAULT (the DN unchanged) and
// RULE:pattern/replacement/ with an optional L or U (lower or upper case)
// after the last slash. The first rule whose pattern matches the whole DN
// gives the name; a DN no rule matches has no principal, and its
// connection is closed.
type PrincipalMapper struct {
	rules []principalRule
	text  string
}

type principalRule struct {
	isDefault bool
	whole     *regexp.Regexp // pattern anchored at both ends: does it apply?
	pattern   *regexp.Regexp // pattern as written: what is replaced
	template  string         // replacement in Go's Expand syntax
	lower     bool
	upper     bool
}

// DefaultPrincipalRules is ssl.principal.mapping.rules unset.
const DefaultPrincipalRules = "DEFAULT"

// ParsePrincipalRules reads ssl.principal.mapping.rules. Patterns are Go
// (RE2) regular expressions: Java's backreferences and lookaround inside a
// pattern are refused, not approximated.
func ParsePrincipalRules(text string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{text: text}
	rest := strings.TrimSpace(text)
	for rest != "" {
		var r principalRule
		var err error
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r.isDefault, rest = true, rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			r, rest, err = parseRule(rest[len("RULE:"):])
			if err != nil {
				return nil, err
			}
		case rest[0] == ',':
			rest = strings.TrimSpace(rest[1:]) // an empty rule, which Apache ignores
			continue
		default:
			return nil, fmt.Errorf("invalid rule %q: want DEFAULT or RULE:pattern/replacement/[LU]", cutRule(rest))
		}
		rest = strings.TrimLeft(rest, " \t")
		if rest != "" && rest[0] != ',' {
			return nil, fmt.Errorf("invalid rule: unexpected %q after a rule", cutRule(rest))
		}
		m.rules = append(m.rules, r)
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	return m, nil
}

func cutRule(s string) string {
	if i := strings.IndexByte(s, ','); i >= 0 {
		return s[:i]
	}
	return s
}

// parseRule reads pattern/replacement/[LU] and returns what follows.
func parseRule(s string) (principalRule, string, error) {
	var r principalRule
	pattern, s, ok := cutUnescaped(s)
	if !ok {
		return r, "", fmt.Errorf("invalid rule RULE:%s: want RULE:pattern/replacement/[LU]", cutRule(s))
	}
	replacement, s, ok := cutUnescaped(s)
	if !ok {
		return r, "", fmt.Errorf("invalid rule RULE:%s/: want RULE:pattern/replacement/[LU]", pattern)
	}
	if s != "" && (s[0] == 'L' || s[0] == 'U') {
		r.lower, r.upper, s = s[0] == 'L', s[0] == 'U', s[1:]
	}
	var err error
	if r.pattern, err = regexp.Compile(pattern); err != nil {
		return r, "", fmt.Errorf("rule pattern %q is not a regular expression kraftd can run (Go's RE2 has no backreferences or lookaround): %v", pattern, err)
	}
	r.whole = regexp.MustCompile("^(?:" + pattern + ")$")
	if r.template, err = javaReplacement(replacement, r.pattern.NumSubexp()); err != nil {
		return r, "", fmt.Errorf("rule replacement %q: %v", replacement, err)
	}
	return r, s, nil
}

// cutUnescaped splits s at its first '/' not escaped by a backslash; the
// part before keeps its backslashes, as both regexps and Java
// replacements give them meaning.
func cutUnescaped(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// javaReplacement converts a java.util.regex replacement into Go's Expand
// template. In Java, \c is the literal c, $n names a group (taking as many
// digits as still name an existing group), ${name} a named group; a
// reference to a group the pattern lacks is literal text, as Apache
// escapes it before replacing.
func javaReplacement(s string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 == len(s) {
				return "", errors.New("ends in a lone backslash")
			}
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case '$':
			if i+1 < len(s) && s[i+1] == '{' {
				end := strings.IndexByte(s[i:], '}')
				if end < 0 {
					return "", errors.New("has ${ without a closing }")
				}
				b.WriteString(s[i : i+end+1])
				i += end
				continue
			}
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == i+1 {
				return "", fmt.Errorf("has $ at %d that names no group (write \\$ for a literal $)", i)
			}
			n, used := 0, i+1
			for k := i + 1; k < j; k++ {
				next := n*10 + int(s[k]-'0')
				if k > i+1 && next > groups {
					break
				}
				n, used = next, k+1
			}
			if n > groups {
				b.WriteString("$$" + s[i+1:j]) // no such group: literal, as Apache makes it
				i = j - 1
				continue
			}
			fmt.Fprintf(&b, "${%d}", n)
			i = used - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Name maps a distinguished name, or fails when no rule applies.
func (m *PrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.whole.MatchString(dn) {
			continue
		}
		out := r.pattern.ReplaceAllString(dn, r.template)
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("no rule of ssl.principal.mapping.rules (%s) applies to %s", m.text, dn)
}

// PrincipalFor is the principal of a peer that presented cert (nil when it
// presented none).
func PrincipalFor(cert *x509.Certificate, m *PrincipalMapper) (Principal, error) {
	if cert == nil {
		return Anonymous, nil
	}
	dn, err := distinguishedName(cert)
	if err != nil {
		return Principal{}, err
	}
	name, err := m.Name(dn)
	if err != nil {
		return Principal{}, err
	}
	return Principal{Type: "User", Name: name}, nil
}
