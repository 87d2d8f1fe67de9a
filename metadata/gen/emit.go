package main

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// emitter writes Go source; format.Source tidies the layout afterwards.
type emitter struct {
	buf bytes.Buffer
}

func (e *emitter) p(format string, args ...any) {
	fmt.Fprintf(&e.buf, format, args...)
	e.buf.WriteByte('\n')
}

func (e *emitter) doc(lines []string) {
	for _, l := range lines {
		e.p("// %s", l)
	}
}

// goType is the Go type of a wire type.
func goType(t *fieldType) string {
	switch t.kind {
	case "array":
		return "[]" + goType(t.elem)
	case "struct":
		return t.strct.goName
	case "string":
		if t.nullable {
			return "*string"
		}
		return "string"
	case "bytes":
		return "[]byte"
	case "uuid":
		return "Uuid"
	}
	return t.kind
}

// minSize is a lower bound on the encoded size of a value of type t at any
// version. Array decoding uses it to refuse lengths the input cannot hold.
func minSize(t *fieldType) int {
	switch t.kind {
	case "bool", "int8":
		return 1
	case "int16", "uint16":
		return 2
	case "int32":
		return 4
	case "int64", "float64":
		return 8
	case "uuid":
		return 16
	case "struct":
		n := 1 // the tag section count
		for _, f := range t.strct.fields {
			if f.minV == 0 && f.maxV < 0 && f.tag < 0 {
				n += minSize(f.typ)
			}
		}
		return n
	}
	return 1 // compact strings, bytes and arrays: at least the length byte
}

// versionCond is the Go condition under which a field exists, "" if always.
func versionCond(f *field) string {
	var conds []string
	if f.minV > 0 {
		conds = append(conds, fmt.Sprintf("version >= %d", f.minV))
	}
	if f.maxV >= 0 {
		conds = append(conds, fmt.Sprintf("version <= %d", f.maxV))
	}
	return strings.Join(conds, " && ")
}

func versionComment(f *field) string {
	var s string
	switch {
	case f.maxV < 0 && f.minV == 0:
	case f.maxV < 0:
		s = fmt.Sprintf("v%d+", f.minV)
	case f.minV == f.maxV:
		s = fmt.Sprintf("v%d", f.minV)
	default:
		s = fmt.Sprintf("v%d-v%d", f.minV, f.maxV)
	}
	if f.tag >= 0 {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("tag %d", f.tag)
	}
	if f.hasDflt {
		if s != "" {
			s += ", "
		}
		s += "default " + f.dflt
	}
	return s
}

// defaultExpr is the Go value of a field's default, "" when it is the zero
// value.
func defaultExpr(f *field) string {
	t := f.typ
	if f.hasDflt && f.dflt == "null" {
		return ""
	}
	switch t.kind {
	case "string":
		lit := strconv.Quote(f.dflt)
		if t.nullable {
			// Apache's default for a nullable string without an explicit
			// null default is the empty string, not null.
			return fmt.Sprintf("new(%s)", lit)
		}
		if f.dflt == "" {
			return ""
		}
		return lit
	case "array", "bytes":
		if t.nullable {
			return fmt.Sprintf("%s{}", goType(t))
		}
		return ""
	}
	if !f.hasDflt || f.dflt == "0" || f.dflt == "false" {
		return ""
	}
	return f.dflt
}

// nonDefaultCond is the condition under which a tagged field differs from
// its default and so must be written.
func nonDefaultCond(f *field, x string) string {
	t := f.typ
	nullDefault := f.hasDflt && f.dflt == "null"
	switch t.kind {
	case "string":
		switch {
		case nullDefault:
			return x + " != nil"
		case t.nullable:
			return fmt.Sprintf("%s == nil || *%s != %s", x, x, strconv.Quote(f.dflt))
		}
		return fmt.Sprintf("%s != %s", x, strconv.Quote(f.dflt))
	case "bytes", "array":
		switch {
		case nullDefault:
			return x + " != nil"
		case t.nullable:
			return fmt.Sprintf("%s == nil || len(%s) != 0", x, x)
		}
		return fmt.Sprintf("len(%s) != 0", x)
	case "uuid":
		return x + " != (Uuid{})"
	case "struct":
		panic("tagged structs are not supported")
	}
	d := "0"
	if f.hasDflt {
		d = f.dflt
	}
	if t.kind == "bool" && !f.hasDflt {
		d = "false"
	}
	return fmt.Sprintf("%s != %s", x, d)
}

var appendFuncs = map[string]string{
	"bool": "AppendBool", "int8": "AppendInt8", "int16": "AppendInt16", "uint16": "AppendUint16",
	"int32": "AppendInt32", "int64": "AppendInt64", "float64": "AppendFloat64",
}

// emitAppend writes code appending value x of type t to dst.
func (e *emitter) emitAppend(t *fieldType, x string, depth int) {
	switch t.kind {
	case "string":
		if t.nullable {
			e.p("dst = kbin.AppendCompactNullableString(dst, %s)", x)
		} else {
			e.p("dst = kbin.AppendCompactString(dst, %s)", x)
		}
	case "bytes":
		if t.nullable {
			e.p("dst = kbin.AppendCompactNullableBytes(dst, %s)", x)
		} else {
			e.p("dst = kbin.AppendCompactBytes(dst, %s)", x)
		}
	case "uuid":
		e.p("dst = append(dst, %s[:]...)", x)
	case "struct":
		e.p("dst = %s.appendTo(dst, version)", x)
	case "array":
		if t.nullable {
			e.p("dst = kbin.AppendCompactNullableArrayLen(dst, len(%s), %s == nil)", x, x)
		} else {
			e.p("dst = kbin.AppendCompactArrayLen(dst, len(%s))", x)
		}
		i := fmt.Sprintf("i%d", depth)
		e.p("for %s := range %s {", i, x)
		e.emitAppend(t.elem, fmt.Sprintf("%s[%s]", x, i), depth+1)
		e.p("}")
	default:
		e.p("dst = kbin.%s(dst, %s)", appendFuncs[t.kind], x)
	}
}

// emitRead writes code decoding a value of type t into x.
func (e *emitter) emitRead(t *fieldType, x string, depth int) {
	switch t.kind {
	case "string":
		if t.nullable {
			e.p("%s = r.compactNullableString()", x)
		} else {
			e.p("%s = r.compactString()", x)
		}
	case "bytes":
		if t.nullable {
			e.p("%s = r.compactNullableBytes()", x)
		} else {
			e.p("%s = r.compactBytes()", x)
		}
	case "struct":
		e.p("%s.readFrom(r, version)", x)
	case "array":
		a, i := fmt.Sprintf("a%d", depth), fmt.Sprintf("i%d", depth)
		if t.nullable {
			e.p("if n, ok := r.arrayLen(true, %d); ok {", minSize(t.elem))
		} else {
			// An empty non-nullable array stays nil: no allocation, and
			// nil and empty mean the same for it.
			e.p("if n, ok := r.arrayLen(false, %d); ok && n > 0 {", minSize(t.elem))
		}
		e.p("%s := make(%s, n)", a, goType(t))
		e.p("for %s := range %s {", i, a)
		e.emitRead(t.elem, fmt.Sprintf("%s[%s]", a, i), depth+1)
		e.p("}")
		e.p("%s = %s", x, a)
		e.p("}")
	default:
		e.p("%s = r.%s()", x, t.kind)
	}
}

func (e *emitter) ifCond(cond string, body func()) {
	if cond == "" {
		body()
		return
	}
	e.p("if %s {", cond)
	body()
	e.p("}")
}

func taggedFields(s *structDef) []*field {
	var tagged []*field
	for _, f := range s.fields {
		if f.tag >= 0 {
			tagged = append(tagged, f)
		}
	}
	sort.Slice(tagged, func(i, j int) bool { return tagged[i].tag < tagged[j].tag })
	return tagged
}

func joinConds(conds ...string) string {
	var out []string
	for _, c := range conds {
		if c != "" {
			out = append(out, "("+c+")")
		}
	}
	return strings.Join(out, " && ")
}

// emitStruct writes the Go type of s and its encode, decode and default
// methods. msg is non-nil for the top-level struct of a message.
func (e *emitter) emitStruct(s *structDef, msg *message, parent string) {
	e.doc(s.doc)
	if len(s.doc) == 0 && msg == nil {
		e.p("// %s is a nested struct of %s.", s.goName, parent)
	}
	e.p("type %s struct {", s.goName)
	if msg != nil {
		e.p("// Version is the schema version the record is encoded at (0-%d).", msg.maxVersion)
		e.p("Version int16")
		e.p("")
	}
	for _, f := range s.fields {
		e.doc(f.doc)
		if c := versionComment(f); c != "" {
			e.p("%s %s // %s", f.name, goType(f.typ), c)
		} else {
			e.p("%s %s", f.name, goType(f.typ))
		}
		if len(f.doc) > 0 {
			e.p("")
		}
	}
	e.p("")
	e.p("// UnknownTags keeps tagged fields unknown at this version for re-encoding.")
	e.p("UnknownTags Tags")
	e.p("}")
	e.p("")

	// Default.
	e.p("// Default sets the fields of v to their schema defaults.")
	e.p("func (v *%s) Default() {", s.goName)
	for _, f := range s.fields {
		if d := defaultExpr(f); d != "" {
			e.p("v.%s = %s", f.name, d)
		}
		if f.typ.kind == "struct" {
			e.p("v.%s.Default()", f.name)
		}
	}
	e.p("}")
	e.p("")

	// appendTo.
	e.p("func (v *%s) appendTo(dst []byte, version int16) []byte {", s.goName)
	e.p("_ = version")
	for _, f := range s.fields {
		if f.tag >= 0 {
			continue
		}
		e.ifCond(versionCond(f), func() {
			e.emitAppend(f.typ, "v."+f.name, 0)
		})
	}
	tagged := taggedFields(s)
	if len(tagged) == 0 {
		e.p("dst = kbin.AppendUvarint(dst, uint32(len(v.UnknownTags)))")
		e.p("return v.UnknownTags.appendRest(dst, 0)")
	} else {
		e.p("count := uint32(len(v.UnknownTags))")
		for _, f := range tagged {
			e.p("if %s {", joinConds(versionCond(f), nonDefaultCond(f, "v."+f.name)))
			e.p("count++")
			e.p("}")
		}
		e.p("dst = kbin.AppendUvarint(dst, count)")
		e.p("next := 0")
		for _, f := range tagged {
			e.p("if %s {", joinConds(versionCond(f), nonDefaultCond(f, "v."+f.name)))
			e.p("dst, next = v.UnknownTags.appendBefore(dst, next, %d)", f.tag)
			e.p("dst = kbin.AppendUvarint(dst, %d)", f.tag)
			e.p("mark := len(dst)")
			e.emitAppend(f.typ, "v."+f.name, 0)
			e.p("dst = closeTagged(dst, mark)")
			e.p("}")
		}
		e.p("return v.UnknownTags.appendRest(dst, next)")
	}
	e.p("}")
	e.p("")

	// readFrom.
	e.p("func (v *%s) readFrom(r *reader, version int16) {", s.goName)
	if msg == nil {
		e.p("r.enter()")
		e.p("defer r.leave()")
	}
	// As in Apache, a field absent at this version, or a tagged field not
	// present in the input, holds its default.
	e.p("v.Default()")
	for _, f := range s.fields {
		if f.tag >= 0 {
			continue
		}
		e.ifCond(versionCond(f), func() {
			e.p("r.at(%q)", f.name)
			e.emitRead(f.typ, "v."+f.name, 0)
		})
	}
	e.p("r.at(\"(tagged fields)\")")
	e.p("for n := r.uvarint(); n > 0 && r.err == nil; n-- {")
	e.p("tag, data := r.taggedField()")
	e.p("switch {")
	for _, f := range tagged {
		e.p("case %s:", joinConds(fmt.Sprintf("tag == %d", f.tag), versionCond(f)))
		e.p("r.at(%q)", f.name)
		e.p("rest := r.beginTagged(data)")
		e.emitRead(f.typ, "v."+f.name, 0)
		e.p("r.endTagged(rest)")
		e.p("r.at(\"(tagged fields)\")")
	}
	e.p("default:")
	e.p("v.UnknownTags = unknownTag(v.UnknownTags, tag, data)")
	e.p("}")
	e.p("}")
	e.p("sortTags(v.UnknownTags)")
	e.p("}")
	e.p("")

	if msg != nil {
		e.emitMessageMethods(s, msg)
	}
}

func (e *emitter) emitMessageMethods(s *structDef, msg *message) {
	n := s.goName
	if msg.control {
		e.p("// ControlType returns %d, the control record type of a %s.", msg.key, n)
		e.p("func (*%s) ControlType() int16 { return %d }", n, msg.key)
	} else {
		e.p("// Key returns %d, the apiKey of a %s.", msg.key, n)
		e.p("func (*%s) Key() int16 { return %d }", n, msg.key)
	}
	e.p("")
	e.p("// MaxVersion returns %d, the newest version of a %s known here.", msg.maxVersion, n)
	e.p("func (*%s) MaxVersion() int16 { return %d }", n, msg.maxVersion)
	e.p("")
	e.p("func (v *%s) GetVersion() int16 { return v.Version }", n)
	e.p("")
	e.p("func (v *%s) SetVersion(version int16) { v.Version = version }", n)
	e.p("")
	e.p("// AppendTo appends v encoded at v.Version.")
	e.p("func (v *%s) AppendTo(dst []byte) []byte { return v.appendTo(dst, v.Version) }", n)
	e.p("")
	e.p("// ReadFrom replaces v's fields with src decoded at v.Version.")
	e.p("func (v *%s) ReadFrom(src []byte) error {", n)
	e.p("_, err := v.readBody(src)")
	e.p("return err")
	e.p("}")
	e.p("")
	e.p("// readBody is ReadFrom that also returns how many bytes were left over.")
	e.p("func (v *%s) readBody(src []byte) (int, error) {", n)
	e.p("version := v.Version")
	e.p("if version < 0 || version > %d {", msg.maxVersion)
	e.p("return 0, &DecodeError{Record: %q, Version: version, Err: ErrUnsupportedVersion}", n)
	e.p("}")
	e.p("*v = %s{Version: version}", n)
	e.p("r := reader{src: src}")
	e.p("v.readFrom(&r, version)")
	e.p("return len(r.src), r.finish(%q, version)", n)
	e.p("}")
	e.p("")
	e.p("// New%s returns a %s with default field values.", n, n)
	e.p("func New%s() *%s {", n, n)
	e.p("v := new(%s)", n)
	e.p("v.Default()")
	e.p("return v")
	e.p("}")
	e.p("")
}

// allStructs lists a message's structs, nested ones after their parent, each
// once.
func allStructs(s *structDef, seen map[*structDef]bool, out []*structDef) []*structDef {
	if seen[s] {
		return out
	}
	seen[s] = true
	out = append(out, s)
	for _, f := range s.fields {
		if st := structOf(f.typ); st != nil {
			out = allStructs(st, seen, out)
		}
	}
	return out
}

func (e *emitter) emitRegistry(msgs []*message) {
	var records, controls []*message
	for _, m := range msgs {
		if m.control {
			controls = append(controls, m)
		} else {
			records = append(records, m)
		}
	}
	e.p("// Record apiKeys. Keys 6, 13 and 16 were never used.")
	e.p("const (")
	for _, m := range records {
		e.p("%sKey int16 = %d", strings.TrimSuffix(m.name, "Record"), m.key)
	}
	e.p(")")
	e.p("")
	e.p("// Control record types used by KRaft (0 and 1 are transaction markers).")
	e.p("const (")
	for _, m := range controls {
		e.p("%sType int16 = %d", strings.TrimSuffix(strings.TrimSuffix(m.name, "Record"), "Message"), m.key)
	}
	e.p(")")
	e.p("")
	e.p("// RecordKeys lists every apiKey this package can decode, ascending.")
	e.p("func RecordKeys() []int16 {")
	var keys []string
	for _, m := range records {
		keys = append(keys, strconv.Itoa(int(m.key)))
	}
	e.p("return []int16{%s}", strings.Join(keys, ", "))
	e.p("}")
	e.p("")
	e.p("// NewRecord returns a new record with default fields for apiKey, or nil")
	e.p("// when the key is unknown.")
	e.p("func NewRecord(apiKey int16) Record {")
	e.p("switch apiKey {")
	for _, m := range records {
		e.p("case %d:", m.key)
		e.p("return New%s()", m.name)
	}
	e.p("}")
	e.p("return nil")
	e.p("}")
	e.p("")
	e.p("// RecordName returns the schema name for apiKey, or \"\" when unknown.")
	e.p("func RecordName(apiKey int16) string {")
	e.p("switch apiKey {")
	for _, m := range records {
		e.p("case %d:", m.key)
		e.p("return %q", m.name)
	}
	e.p("}")
	e.p("return \"\"")
	e.p("}")
	e.p("")
	e.p("// ControlTypes lists every control type NewControl knows, ascending.")
	e.p("func ControlTypes() []int16 {")
	keys = nil
	for _, m := range controls {
		keys = append(keys, strconv.Itoa(int(m.key)))
	}
	e.p("return []int16{%s}", strings.Join(keys, ", "))
	e.p("}")
	e.p("")
	e.p("// NewControl returns a new control value with default fields for a")
	e.p("// control type, or nil when the type is not a KRaft one.")
	e.p("func NewControl(controlType int16) ControlValue {")
	e.p("switch controlType {")
	for _, m := range controls {
		e.p("case %d:", m.key)
		e.p("return New%s()", m.name)
	}
	e.p("}")
	e.p("return nil")
	e.p("}")
	e.p("")
	e.p("// ControlName returns the schema name for a control type, or \"\".")
	e.p("func ControlName(controlType int16) string {")
	e.p("switch controlType {")
	for _, m := range controls {
		e.p("case %d:", m.key)
		e.p("return %q", m.name)
	}
	e.p("}")
	e.p("return \"\"")
	e.p("}")
}
