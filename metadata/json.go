package metadata

import (
	"reflect"
	"unicode"
	"unicode/utf8"
)

// ToJSON returns a record or control value as plain maps, slices and values
// ready for encoding/json, with Apache's lowerCamel field names (as its
// generated JSON converters and kafka-dump-log print them). Uuids print in
// Kafka's base64 form; the schema Version and unknown tags are left out.
func ToJSON(v any) any {
	return toJSON(reflect.ValueOf(v))
}

var uuidType = reflect.TypeOf(Uuid{})

func toJSON(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return toJSON(v.Elem())
	case reflect.Struct:
		out := map[string]any{}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Name == "Version" || f.Name == "UnknownTags" {
				continue
			}
			out[lowerCamel(f.Name)] = toJSON(v.Field(i))
		}
		return out
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.IsNil() {
				return nil
			}
			return v.Bytes() // encoding/json prints []byte as base64, as Apache does
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = toJSON(v.Index(i))
		}
		return out
	case reflect.Array:
		if v.Type() == uuidType {
			return v.Interface().(Uuid).String()
		}
	}
	return v.Interface()
}

func lowerCamel(name string) string {
	r, size := utf8.DecodeRuneInString(name)
	return string(unicode.ToLower(r)) + name[size:]
}
