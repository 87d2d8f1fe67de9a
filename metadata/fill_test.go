package metadata

import (
	"reflect"
)

// fill sets every schema field of the struct behind ptr (recursively) to a
// value that differs from both the zero value and any schema default, so a
// field that is dropped or misplaced by an encoder shows up in a comparison.
// Version and UnknownTags are left alone. seed varies the values.
func fill(ptr any, seed int) {
	fillValue(reflect.ValueOf(ptr).Elem(), seed)
}

func fillValue(v reflect.Value, seed int) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[Uuid]() {
			break
		}
		for i := 0; i < v.NumField(); i++ {
			name := v.Type().Field(i).Name
			if name == "Version" || name == "UnknownTags" {
				continue
			}
			fillValue(v.Field(i), seed+i)
		}
		return
	case reflect.Array: // Uuid
		for i := 0; i < v.Len(); i++ {
			v.Index(i).SetUint(uint64(seed*16 + i + 1))
		}
		return
	case reflect.Bool:
		// Only RegisterBrokerRecord.Fenced defaults to true, and it is not
		// tagged, so true is always a visible value.
		v.SetBool(true)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(seed%100 + 3))
	case reflect.Uint16:
		v.SetUint(uint64(seed%1000 + 9000))
	case reflect.Float64:
		v.SetFloat(float64(seed) + 0.5)
	case reflect.String:
		v.SetString("s" + string(rune('a'+seed%26)))
	case reflect.Pointer: // *string
		s := "n" + string(rune('a'+seed%26))
		v.Set(reflect.ValueOf(&s))
	case reflect.Slice:
		n := 2
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillValue(s.Index(i), seed+7*i+1)
		}
		v.Set(s)
	}
}

// perturbField returns a copy of the filled record behind ptr with field i
// changed: zeroed, or for a bool (which fill sets to true) flipped.
func perturbField(ptr any, i int) any {
	cp := reflect.New(reflect.TypeOf(ptr).Elem())
	cp.Elem().Set(reflect.ValueOf(ptr).Elem())
	f := cp.Elem().Field(i)
	f.Set(reflect.Zero(f.Type()))
	return cp.Interface()
}
