package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// message is one parsed definition file: a metadata record or a control
// record value.
type message struct {
	control    bool // a control record value rather than a framed metadata record
	name       string
	key        int16 // apiKey of a metadata record, control type of a control value
	maxVersion int16
	root       *structDef
	file       string
}

// structDef is the top-level struct of a message or a nested one.
type structDef struct {
	name   string // name in the definition file
	goName string // Go type name
	doc    []string
	fields []*field
}

type field struct {
	name     string
	typ      *fieldType
	minV     int16
	maxV     int16 // -1: no upper bound
	tag      int   // -1: not tagged
	dflt     string
	hasDflt  bool
	doc      []string
	lineNo   int
	inStruct *structDef
}

// fieldType is a wire type. kind is a primitive name, "array" or "struct".
type fieldType struct {
	kind     string
	nullable bool
	elem     *fieldType // arrays
	strct    *structDef // structs
}

var primitives = map[string]bool{
	"bool": true, "int8": true, "int16": true, "uint16": true, "int32": true,
	"int64": true, "float64": true, "string": true, "bytes": true, "uuid": true,
}

// maxNesting bounds struct nesting so the decoder's field path fits its fixed
// array (metadata.maxFieldDepth).
const maxNesting = 7

type parser struct {
	file    string
	lines   []string
	pos     int
	structs map[string]*structDef // per file, for reuse of a struct by name
	msg     *message
}

func parseDefinition(file string, r io.Reader) (*message, error) {
	p := &parser{file: file, structs: map[string]*structDef{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t")
		p.lines = append(p.lines, line)
		if strings.Contains(line, "\t") {
			return nil, fmt.Errorf("%s:%d: tabs are not allowed", file, len(p.lines))
		}
		if spaces := len(line) - len(strings.TrimLeft(line, " ")); spaces%2 != 0 {
			return nil, fmt.Errorf("%s:%d: indent by two spaces per level", file, len(p.lines))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	msg, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, p.pos, err)
	}
	return msg, nil
}

// next returns the next meaningful line with its indentation level and any
// doc comment lines directly above it. ok is false at end of file.
func (p *parser) next() (indent int, text string, doc []string, ok bool) {
	for p.pos < len(p.lines) {
		line := p.lines[p.pos]
		p.pos++
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			doc = nil
			continue
		case strings.HasPrefix(trimmed, "//"):
			doc = append(doc, strings.TrimPrefix(strings.TrimPrefix(trimmed, "//"), " "))
			continue
		}
		// parseDefinition already rejected odd indentation and tabs.
		return (len(line) - len(trimmed)) / 2, trimmed, doc, true
	}
	return 0, "", nil, false
}

func (p *parser) peekIndent() (int, bool) {
	save := p.pos
	indent, _, _, ok := p.next()
	p.pos = save
	return indent, ok
}

func (p *parser) parse() (*message, error) {
	indent, header, doc, ok := p.next()
	if !ok || indent != 0 {
		return nil, fmt.Errorf("expected a record or control header")
	}
	words := strings.Fields(header)
	if len(words) != 4 || (words[0] != "record" && words[0] != "control") {
		return nil, fmt.Errorf("header must be `record|control <Name> key=N|type=N versions=...`, got %q", header)
	}
	msg := &message{control: words[0] == "control", name: words[1], file: p.file}
	keyWord := "key="
	if msg.control {
		keyWord = "type="
	}
	key, err := parseAssign(words[2], keyWord, 0, 32767)
	if err != nil {
		return nil, err
	}
	msg.key = int16(key)
	minV, maxV, err := parseVersions(strings.TrimPrefix(words[3], "versions="))
	if err != nil || !strings.HasPrefix(words[3], "versions=") || minV != 0 || maxV < 0 {
		return nil, fmt.Errorf("bad versions %q: want versions=N or versions=0-N", words[3])
	}
	msg.maxVersion = maxV
	p.msg = msg
	msg.root = &structDef{name: msg.name, goName: msg.name, doc: doc}
	if err := p.parseFields(msg.root, 0); err != nil {
		return nil, err
	}
	if _, _, _, more := p.next(); more {
		return nil, fmt.Errorf("unexpected line after the fields")
	}
	return msg, nil
}

func (p *parser) parseFields(s *structDef, level int) error {
	if level > maxNesting {
		return fmt.Errorf("structs nest deeper than %d", maxNesting)
	}
	seen := map[string]bool{}
	tags := map[int]bool{}
	for {
		indent, ok := p.peekIndent()
		if !ok || indent < level {
			return nil
		}
		if indent > level {
			_, text, _, _ := p.next()
			return fmt.Errorf("unexpected indentation at %q", text)
		}
		_, text, doc, _ := p.next()
		f, err := p.parseField(text, doc)
		if err != nil {
			return err
		}
		f.lineNo = p.pos
		f.inStruct = s
		if seen[f.name] {
			return fmt.Errorf("duplicate field %s", f.name)
		}
		seen[f.name] = true
		if f.tag >= 0 {
			if tags[f.tag] {
				return fmt.Errorf("duplicate tag %d", f.tag)
			}
			tags[f.tag] = true
		}
		if f.maxV >= 0 && f.maxV > p.msg.maxVersion || f.minV > p.msg.maxVersion {
			return fmt.Errorf("field %s: versions outside the record's", f.name)
		}
		if st := structOf(f.typ); st != nil {
			if err := p.parseStructBody(st, level+1); err != nil {
				return err
			}
		}
		s.fields = append(s.fields, f)
	}
}

// parseStructBody reads the fields of a struct unless the struct was defined
// earlier in the file, in which case it must have no body here.
func (p *parser) parseStructBody(st *structDef, level int) error {
	indent, ok := p.peekIndent()
	hasBody := ok && indent == level
	if len(st.fields) > 0 {
		if hasBody {
			return fmt.Errorf("struct %s defined twice", st.name)
		}
		return nil
	}
	if !hasBody {
		return fmt.Errorf("struct %s has no fields", st.name)
	}
	return p.parseFields(st, level)
}

func structOf(t *fieldType) *structDef {
	if t.kind == "array" {
		t = t.elem
	}
	return t.strct
}

func (p *parser) parseField(text string, doc []string) (*field, error) {
	words := strings.Fields(text)
	if len(words) < 2 {
		return nil, fmt.Errorf("field line needs a name and a type: %q", text)
	}
	f := &field{name: words[0], maxV: -1, tag: -1, doc: doc}
	if !isExported(f.name) {
		return nil, fmt.Errorf("field name %q must start with an upper-case letter", f.name)
	}
	switch f.name {
	case "Version", "UnknownTags", "Key", "MaxVersion", "Default":
		return nil, fmt.Errorf("field name %q collides with a generated member", f.name)
	}
	typ, err := p.parseType(words[1])
	if err != nil {
		return nil, err
	}
	f.typ = typ
	for _, w := range words[2:] {
		switch {
		case strings.HasPrefix(w, "v"):
			if f.minV, f.maxV, err = parseVersions(w[1:]); err != nil {
				return nil, err
			}
		case strings.HasPrefix(w, "tag="):
			tag, err := parseAssign(w, "tag=", 0, 1<<31-1)
			if err != nil {
				return nil, err
			}
			f.tag = tag
		case strings.HasPrefix(w, "default="):
			f.dflt, f.hasDflt = strings.TrimPrefix(w, "default="), true
		default:
			return nil, fmt.Errorf("unknown field attribute %q", w)
		}
	}
	return f, checkDefault(f)
}

func (p *parser) parseType(s string) (*fieldType, error) {
	nullable := strings.HasSuffix(s, "?")
	s = strings.TrimSuffix(s, "?")
	if strings.HasPrefix(s, "[]") {
		elem, err := p.parseType(s[2:])
		if err != nil {
			return nil, err
		}
		if elem.nullable || elem.kind == "array" {
			return nil, fmt.Errorf("array elements must be non-nullable and not arrays")
		}
		return &fieldType{kind: "array", nullable: nullable, elem: elem}, nil
	}
	if primitives[s] {
		if nullable && s != "string" && s != "bytes" {
			return nil, fmt.Errorf("type %s cannot be nullable", s)
		}
		return &fieldType{kind: s, nullable: nullable}, nil
	}
	if !isExported(s) {
		return nil, fmt.Errorf("unknown type %q", s)
	}
	if nullable {
		return nil, fmt.Errorf("nullable structs are not supported")
	}
	st := p.structs[s]
	if st == nil {
		st = &structDef{name: s, goName: p.msg.name + s}
		p.structs[s] = st
	}
	return &fieldType{kind: "struct", strct: st}, nil
}

func checkDefault(f *field) error {
	if !f.hasDflt {
		return nil
	}
	t := f.typ
	switch {
	case f.dflt == "null":
		if !t.nullable {
			return fmt.Errorf("field %s: default null on a non-nullable type", f.name)
		}
	case t.kind == "bool":
		if f.dflt != "true" && f.dflt != "false" {
			return fmt.Errorf("field %s: bool default must be true or false", f.name)
		}
	case t.kind == "int8" || t.kind == "int16" || t.kind == "int32" || t.kind == "int64" ||
		t.kind == "uint16" || t.kind == "float64":
		if _, err := strconv.ParseFloat(f.dflt, 64); err != nil {
			return fmt.Errorf("field %s: bad numeric default %q", f.name, f.dflt)
		}
	case t.kind == "string":
	default:
		return fmt.Errorf("field %s: type %s takes no default but null", f.name, t.kind)
	}
	return nil
}

func parseAssign(word, prefix string, lo, hi int) (int, error) {
	if !strings.HasPrefix(word, prefix) {
		return 0, fmt.Errorf("expected %sN, got %q", prefix, word)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(word, prefix))
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("bad number in %q", word)
	}
	return n, nil
}

// parseVersions reads "N", "N+" or "N-M". An open range has max -1.
func parseVersions(s string) (minV, maxV int16, err error) {
	bad := fmt.Errorf("bad version range %q", s)
	atoi := func(s string) (int16, error) {
		n, err := strconv.ParseInt(s, 10, 16)
		if err != nil || n < 0 {
			return 0, bad
		}
		return int16(n), nil
	}
	switch {
	case strings.HasSuffix(s, "+"):
		minV, err = atoi(strings.TrimSuffix(s, "+"))
		return minV, -1, err
	case strings.Contains(s, "-"):
		lo, hi, _ := strings.Cut(s, "-")
		if minV, err = atoi(lo); err != nil {
			return 0, 0, err
		}
		if maxV, err = atoi(hi); err != nil || maxV < minV {
			return 0, 0, bad
		}
		return minV, maxV, nil
	default:
		minV, err = atoi(s)
		return minV, minV, err
	}
}

func isExported(s string) bool {
	return s != "" && s[0] >= 'A' && s[0] <= 'Z'
}
