package server

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// ParseProperties reads a Java .properties file as Kafka reads
// server.properties: `key=value`, `key: value` or `key value`, `#` and `!`
// comments, backslash line continuations and the usual escapes. Later
// duplicates win, as in java.util.Properties.
func ParseProperties(r io.Reader) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var logical strings.Builder
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if logical.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if continues(line) {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		key, value, err := splitProperty(logical.String())
		logical.Reset()
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		props[key] = value
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if logical.Len() > 0 {
		key, value, err := splitProperty(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		props[key] = value
	}
	return props, nil
}

// continues reports whether line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func splitProperty(s string) (string, string, error) {
	var key strings.Builder
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			key.WriteByte(unescape(s[i]))
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		key.WriteByte(c)
	}
	// Skip the separator: white space, then at most one '=' or ':', then white space.
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f') {
		i++
	}
	if i < len(s) && (s[i] == '=' || s[i] == ':') {
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f') {
		i++
	}
	var value strings.Builder
	for ; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			value.WriteByte(unescape(s[i]))
			continue
		}
		value.WriteByte(s[i])
	}
	if key.Len() == 0 {
		return "", "", fmt.Errorf("property with an empty key: %q", s)
	}
	return key.String(), value.String(), nil
}

func unescape(c byte) byte {
	switch c {
	case 't':
		return '\t'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 'f':
		return '\f'
	}
	return c
}
