package sasl

import (
	"errors"
	"fmt"
	"strings"
)

// JAASModule is one login module entry of a sasl.jaas.config value:
// `<class> <flag> key="value" ... ;`.
type JAASModule struct {
	Class   string
	Flag    string // required, requisite, sufficient or optional
	Options map[string]string
}

// parseJAAS reads Apache's JAAS syntax as its JaasConfig does with Java's
// StreamTokenizer: words, quoted strings ("..." or '...', backslash
// escapes), '=' and ';', with // and /* */ comments. Errors name option
// keys and positions, never values: the values are passwords.
func parseJAAS(text string) ([]JAASModule, error) {
	t := &jaasTokenizer{s: text}
	var out []JAASModule
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == jaasEOF {
			break
		}
		m, err := parseJAASModule(t, tok)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("names no login module")
	}
	return out, nil
}

func parseJAASModule(t *jaasTokenizer, class jaasToken) (JAASModule, error) {
	if class.kind != jaasWord {
		return JAASModule{}, fmt.Errorf("expects a login module class at offset %d", class.at)
	}
	m := JAASModule{Class: class.text, Options: map[string]string{}}
	flag, err := t.next()
	if err != nil {
		return m, err
	}
	switch strings.ToLower(flag.text) {
	case "required", "requisite", "sufficient", "optional":
		if flag.kind != jaasWord {
			return m, fmt.Errorf("expects a control flag after %s", m.Class)
		}
		m.Flag = strings.ToLower(flag.text)
	default:
		return m, fmt.Errorf("expects a control flag (required, requisite, sufficient, optional) after %s", m.Class)
	}
	for {
		key, err := t.next()
		if err != nil {
			return m, err
		}
		switch key.kind {
		case jaasSemicolon:
			return m, nil
		case jaasEOF:
			return m, errors.New("entry is not terminated by a semicolon")
		case jaasWord, jaasQuoted:
		default:
			return m, fmt.Errorf("expects an option name at offset %d", key.at)
		}
		eq, err := t.next()
		if err != nil {
			return m, err
		}
		value, err := t.next()
		if err != nil {
			return m, err
		}
		if eq.kind != jaasEquals || (value.kind != jaasWord && value.kind != jaasQuoted) {
			return m, fmt.Errorf("has no value for option %q", key.text)
		}
		m.Options[key.text] = value.text
	}
}

type jaasTokenKind int

const (
	jaasEOF jaasTokenKind = iota
	jaasWord
	jaasQuoted
	jaasEquals
	jaasSemicolon
	jaasOther
)

type jaasToken struct {
	kind jaasTokenKind
	text string
	at   int
}

type jaasTokenizer struct {
	s   string
	pos int
}

func isJAASWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
		b == '.' || b == '-' || b == '_' || b == '$' || b >= 0x80
}

func (t *jaasTokenizer) next() (jaasToken, error) {
	if err := t.skipSpaceAndComments(); err != nil {
		return jaasToken{}, err
	}
	if t.pos >= len(t.s) {
		return jaasToken{kind: jaasEOF, at: t.pos}, nil
	}
	start := t.pos
	switch b := t.s[t.pos]; {
	case b == '=':
		t.pos++
		return jaasToken{kind: jaasEquals, text: "=", at: start}, nil
	case b == ';':
		t.pos++
		return jaasToken{kind: jaasSemicolon, text: ";", at: start}, nil
	case b == '"' || b == '\'':
		return t.quoted(b)
	case isJAASWordByte(b):
		for t.pos < len(t.s) && isJAASWordByte(t.s[t.pos]) {
			t.pos++
		}
		return jaasToken{kind: jaasWord, text: t.s[start:t.pos], at: start}, nil
	default:
		t.pos++
		return jaasToken{kind: jaasOther, at: start}, nil
	}
}

// quoted reads a string up to its closing quote; as in StreamTokenizer a
// backslash escapes the next character and a line end ends the string.
func (t *jaasTokenizer) quoted(quote byte) (jaasToken, error) {
	start := t.pos
	t.pos++
	var b strings.Builder
	for t.pos < len(t.s) {
		c := t.s[t.pos]
		t.pos++
		switch {
		case c == quote:
			return jaasToken{kind: jaasQuoted, text: b.String(), at: start}, nil
		case c == '\n' || c == '\r':
			return jaasToken{}, fmt.Errorf("has a quoted string at offset %d that a line end cuts", start)
		case c == '\\' && t.pos < len(t.s):
			b.WriteByte(unescapeJAAS(t.s[t.pos]))
			t.pos++
		default:
			b.WriteByte(c)
		}
	}
	return jaasToken{}, fmt.Errorf("has a quoted string at offset %d with no closing quote", start)
}

func unescapeJAAS(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	}
	return c
}

func (t *jaasTokenizer) skipSpaceAndComments() error {
	for t.pos < len(t.s) {
		switch {
		case t.s[t.pos] <= ' ':
			t.pos++
		case strings.HasPrefix(t.s[t.pos:], "//"):
			end := strings.IndexAny(t.s[t.pos:], "\r\n")
			if end < 0 {
				t.pos = len(t.s)
			} else {
				t.pos += end
			}
		case strings.HasPrefix(t.s[t.pos:], "/*"):
			end := strings.Index(t.s[t.pos+2:], "*/")
			if end < 0 {
				return fmt.Errorf("has a comment at offset %d with no end", t.pos)
			}
			t.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}
