package controller

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kraftd/kraftd/metadata"
)

// How transcripts print records and answers: one line each, the fields
// that differ from their defaults as lowerCamel=value. Error codes print
// by name, topic ids as <topic>, other uuids by their first characters,
// bytes by their length; an empty list is no list, except in a change
// record, where it sets the list empty. The fields below are left out:
// the schema version, what every registration repeats (listeners,
// features) and the configs CreateTopics answers with.
var skipFields = map[string]bool{"Version": true, "UnknownTags": true, "ThrottleMillis": true,
	"EndPoints": true, "Listeners": true, "Features": true, "IncarnationId": true, "IncarnationID": true, "Configs": true}

// alwaysFields print even at their defaults: fenced, and a partition's
// leader (-1, none).
var alwaysFields = map[string]bool{"RegisterBrokerRecord.Fenced": true, "PartitionRecord.Leader": true}

// records prints records after a colon, one on the line, more below it.
func (tr *transcript) records(recs []metadata.Record) string {
	var lines []string
	for _, r := range recs {
		if t, ok := r.(*metadata.TopicRecord); ok {
			tr.names[t.TopicId] = t.Name
		}
		if r == nil {
			lines = append(lines, "LeaderChange (control)")
		} else {
			lines = append(lines, tr.brief(r))
		}
	}
	if len(lines) == 1 {
		return " " + lines[0]
	}
	return "\n  " + strings.Join(lines, "\n  ")
}

// brief is a record's type and fields, or an answer's fields.
func (tr *transcript) brief(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	fields := tr.fields(rv)
	if name, ok := strings.CutSuffix(rv.Type().Name(), "Record"); ok {
		return strings.TrimSpace(name + " " + fields)
	}
	return fields
}

// fields prints a struct's fields that differ from a fresh value of its
// type with Default applied (kmsg and metadata structs both have one).
func (tr *transcript) fields(v reflect.Value) string {
	def := reflect.New(v.Type())
	if d, ok := def.Interface().(interface{ Default() }); ok {
		d.Default()
	}
	var parts []string
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || skipFields[f.Name] {
			continue
		}
		fv, dv := v.Field(i), def.Elem().Field(i)
		same := reflect.DeepEqual(fv.Interface(), dv.Interface()) ||
			fv.Kind() == reflect.Slice && fv.Len() == 0 && dv.Len() == 0 && !strings.HasSuffix(v.Type().Name(), "ChangeRecord")
		if same && !alwaysFields[v.Type().Name()+"."+f.Name] {
			continue
		}
		parts = append(parts, lowerFirst(f.Name)+"="+tr.value(f.Name, fv))
	}
	return strings.Join(parts, " ")
}

func (tr *transcript) value(name string, v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "null"
		}
		return tr.value(name, v.Elem())
	case reflect.String:
		if s := v.String(); s != "" && !strings.ContainsAny(s, " \t") {
			return s
		}
		return fmt.Sprintf("%q", v.String())
	case reflect.Struct:
		return "{" + tr.fields(v) + "}"
	case reflect.Array:
		if v.Len() == 16 && v.Type().Elem().Kind() == reflect.Uint8 {
			var id metadata.Uuid
			reflect.Copy(reflect.ValueOf(id[:]), v)
			if n, ok := tr.names[id]; ok {
				return "<" + n + ">"
			}
			return id.String()[:8]
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return fmt.Sprintf("<%d bytes>", v.Len())
		}
		var items []string
		for i := range v.Len() {
			items = append(items, tr.value(name, v.Index(i)))
		}
		return "[" + strings.Join(items, ",") + "]"
	case reflect.Int16:
		if strings.HasSuffix(name, "ErrorCode") {
			return codeName(int16(v.Int()))
		}
	}
	return fmt.Sprint(v.Interface())
}

func lowerFirst(s string) string {
	return string(unicode.ToLower(rune(s[0]))) + s[1:]
}

func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e := kerr.ErrorForCode(code); e != nil {
		if ke, ok := e.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return fmt.Sprint(code)
}

// errText is an operation's error as a client sees it: code and message.
func errText(err error) string {
	if err == nil {
		return ""
	}
	code, msg := ErrorCode(err)
	if msg == nil {
		return codeName(code)
	}
	return fmt.Sprintf("%s %q", codeName(code), *msg)
}
